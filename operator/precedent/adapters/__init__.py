"""Adapters at the edge: files, HTTP, the vector index, Kubernetes objects."""
