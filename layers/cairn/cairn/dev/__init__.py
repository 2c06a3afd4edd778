"""cairn dev: the bundle on localhost."""
