"""The HTTP API (`distill serve`): FastAPI on uvicorn, versioned under `/v1`.

FastAPI is imported here only, so that the default install stays light:
`pip install 'distill[server]'` brings it. `create_app` builds the app of a `Service` (the
memory it serves, its keys and its background worker); `auth` says who may do what,
`errors` how every failure is answered, `limits` and `schemas` what a request may hold.
"""

from distill.service.http.app import create_app
from distill.service.http.state import Service

__all__ = ["Service", "create_app"]
