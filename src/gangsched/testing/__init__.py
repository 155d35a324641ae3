"""Helpers for tests and benchmarks: builders for nodes, clusters and gang trees."""
