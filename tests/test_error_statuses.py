"""The exception tree says what went wrong; the HTTP layer alone gives each class its status, in
one table (mps.errors, mps.http.statuses)."""

from __future__ import annotations

import inspect

import pytest

from mps import errors
from mps.auth.authenticate import KeyRefused
from mps.errors import (
    BadRequest,
    Conflict,
    FieldError,
    Forbidden,
    KeyAlreadyStored,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PaymentDeclined,
    RateLimited,
    ServiceError,
    ShardMoved,
    StaleWrite,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMedia,
    ValidationFailed,
)
from mps.http.statuses import STATUSES, ProtocolError, status_of


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class mps.errors defines, found by looking, not by a list kept by hand."""
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, BaseException) and cls.__module__ == errors.__name__
    ]


def test_the_scan_finds_the_whole_exception_tree() -> None:
    found = set(_exception_classes())

    assert {ServiceError, BadRequest, ValidationFailed, ShardMoved, StaleWrite} <= found
    assert len(found) == len(errors.__all__) - 2  # all but FieldError and RETRY_AFTER


@pytest.mark.parametrize("cls", _exception_classes(), ids=lambda cls: cls.__name__)
def test_no_error_class_carries_an_http_status(cls: type[BaseException]) -> None:
    statuses = {
        name: value
        for name in dir(cls)
        if isinstance(value := getattr(cls, name), int)
        and not isinstance(value, bool)
        and 100 <= value <= 599
    }

    assert "status" not in dir(cls)
    assert not statuses, f"{cls.__name__} holds what looks like an HTTP status: {statuses}"


@pytest.mark.parametrize(
    "cls",
    [cls for cls in _exception_classes() if issubclass(cls, ServiceError)],
    ids=lambda cls: cls.__name__,
)
def test_every_error_a_client_may_see_has_its_own_row_in_the_status_table(
    cls: type[ServiceError],
) -> None:
    assert cls in STATUSES


def test_the_errors_that_never_reach_a_client_are_outside_the_tree_a_client_sees() -> None:
    # They are handled inside the service (a reload, a replayed response); one that escaped would
    # be a bug of ours, which the pipeline answers as any other: internal_error.
    unseen = [cls for cls in _exception_classes() if not issubclass(cls, ServiceError)]

    assert set(unseen) == {StaleWrite, KeyAlreadyStored}
    assert status_of(ServiceError("a bug of ours")) == 500


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (BadRequest("bad", code="invalid_json"), 400),
        (ValidationFailed([FieldError("amountMinor", "must be positive")]), 400),
        (Unauthenticated("who?"), 401),
        (PaymentDeclined("declined", code="insufficient_funds"), 402),
        (Forbidden("no", code="test_key_required"), 403),
        (NotFound("none"), 404),
        (MethodNotAllowed("not this", frozenset({"GET"})), 405),
        (Conflict("taken", code="duplicate"), 409),
        (PayloadTooLarge("too large"), 413),
        (UnsupportedMedia("not JSON"), 415),
        (Unprocessable("reused"), 422),
        (RateLimited(3), 429),
        (Unavailable("down", code="processor_unavailable", retry_after=5), 503),
        (ShardMoved(), 503),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, ServiceError) else str(value),
)
def test_each_error_is_answered_with_the_contracts_status(error: ServiceError, status: int) -> None:
    assert status_of(error) == status


class _ElsewhereDeclined(PaymentDeclined):
    """Like mps.actors.payment.messages.CheckoutDeclined: a subclass the table does not name."""


def test_an_error_defined_outside_the_tree_answers_as_its_nearest_ancestor() -> None:
    assert status_of(_ElsewhereDeclined("declined")) == 402
    assert status_of(KeyRefused("revoked")) == 401


def test_a_refusal_of_aiohttps_keeps_the_status_aiohttp_chose() -> None:
    refused = ProtocolError(431, "Headers too large", code="bad_request")

    assert status_of(refused) == 431
    assert refused.code == "bad_request"
