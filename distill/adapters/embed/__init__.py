"""Embedders: implementations of `distill.ports.Embedder`."""
