"""HTML pages for people (hosted checkout), served outside /api/v1."""
