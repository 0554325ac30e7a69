"""Adapters: implementations of the ports in `distill.ports`."""
