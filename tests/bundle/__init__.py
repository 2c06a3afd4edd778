"""What `cairn init` writes, and the bundles it makes, tried as a user tries them."""
