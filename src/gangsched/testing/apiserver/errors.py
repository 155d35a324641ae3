"""API errors as the Kubernetes API server reports them: a ``Status`` object with a
``reason`` and an HTTP ``code``.

The messages follow the real server's wording, so client code that matches on them (or
shows them to a user) behaves the same against this server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ApiError(Exception):
    """An error answered as a ``v1 Status`` (``status: Failure``)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The ``Status`` object sent as the response body (or in a watch ERROR event)."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``Status`` with ``status: Success`` (the body of a binding or some deletions)."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success"}
    if details:
        body["details"] = details
    body["code"] = code
    return body


def _details(resource: str, group: str, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``leases.coordination.k8s.io``, as the server names a resource."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(resource, group)} "{name}" not found',
                    _details(resource, group, name))


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource",
                    {})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists",
                    f'{qualified(resource, group)} "{name}" already exists',
                    _details(resource, group, name))


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {qualified(resource, group)} '
                    f'"{name}": {why}',
                    _details(resource, group, name))


STALE = "the object has been modified; please apply your changes to the latest version " \
        "and try again"


def stale(resource: str, group: str, name: str) -> ApiError:
    """409 Conflict for an update with an out-of-date ``metadata.resourceVersion``."""
    return conflict(resource, group, name, STALE)


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid; ``causes`` are (field, message) pairs."""
    text = "; ".join(f"{f}: {m}" if f else m for f, m in causes)
    shown = f"{kind}.{group}" if group else kind
    details = {"name": name, "group": group, "kind": kind,
               "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f}
                          for f, m in causes]}
    if not group:
        del details["group"]
    return ApiError(422, "Invalid", f'{shown} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})


PATCH_MEDIA_TYPES = ("application/json-patch+json, application/merge-patch+json, "
                     "application/apply-patch+yaml")


def unsupported_media_type(content_type: str, accepted: str = PATCH_MEDIA_TYPES) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: {accepted} (got {content_type or 'none'})")


def expired(requested: int, oldest: int) -> ApiError:
    """410 for a watch from a resourceVersion older than the kept history (reason
    ``Expired``, as the real server's watch cache says)."""
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def internal(message: str = "an error on the server (injected) has prevented the request "
             "from succeeding") -> ApiError:
    return ApiError(500, "InternalError", message,
                    {"causes": [{"message": "injected fault"}]})


def too_many_requests(retry_after: int = 1) -> ApiError:
    return ApiError(429, "TooManyRequests",
                    "the server has received too many requests and has asked us to try again "
                    "later (injected)", {"retryAfterSeconds": retry_after},
                    {"Retry-After": str(retry_after)})


def service_unavailable() -> ApiError:
    return ApiError(503, "ServiceUnavailable",
                    "the server is currently unable to handle the request (injected)")


def timeout() -> ApiError:
    return ApiError(504, "Timeout",
                    "the server was unable to return a response in the time allotted, but may "
                    "still be processing the request (injected)")


INJECTABLE: dict[int, Callable[[], ApiError]] = {
    500: internal, 429: too_many_requests, 503: service_unavailable, 504: timeout}
"""Status codes fault injection can answer with, and how each is built."""
