"""The pure core: models, policies, plans and passes. No I/O, no drivers, no clocks."""
