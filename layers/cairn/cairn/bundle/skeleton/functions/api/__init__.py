"""The API function."""
