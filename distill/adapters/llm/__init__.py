"""LLM providers behind the `LLM` port."""
