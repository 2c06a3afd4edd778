"""What `cairn init` writes: a new bundle's files."""
