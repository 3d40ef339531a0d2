"""One module per kind. `base` holds the shared envelope and metadata models."""
