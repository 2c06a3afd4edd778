"""The scheduler function."""
