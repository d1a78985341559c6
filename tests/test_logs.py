"""Logs never hold secrets: the redaction filter (mps.logs), the dev mailbox's log line, run.py's
logging, and the log guard that checks a whole test run (tests/log_guard.py)."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from mps.adapters.mail import DevMailbox, Mail
from mps.auth.api_keys import generate_key
from mps.logs import RedactSecrets, install_redaction, redact
from tests.log_guard import leaks
from tests.served import JWT, logged_by_run_py
from tests.server import RunningServer


def _record(msg: Any, *args: Any, **fields: Any) -> logging.LogRecord:
    record = logging.LogRecord("test", logging.INFO, __file__, 1, msg, args or None, None)
    record.__dict__.update(fields)
    return record


def test_redact_replaces_bearer_credentials_and_jwts() -> None:
    assert redact(f"Authorization: Bearer {JWT}") == "Authorization: [redacted]"
    assert redact(f"sent Bearer {JWT} twice") == "sent Bearer [redacted] twice"
    assert redact(f"token {JWT} expired") == "token [jwt] expired"
    assert redact("Authorization: Basic dXNlcjpwYXNzd29yZA==") == "Authorization: [redacted]"


def test_redact_keeps_only_the_prefix_and_last_four_of_an_api_key() -> None:
    key = generate_key("secret", "live")

    assert redact(f"key {key} used") == f"key sk_live_****{key[-4:]} used"
    assert redact(f"Bearer {key}") == "Bearer [redacted]"


def test_redact_replaces_sign_in_codes_next_to_otp_or_code() -> None:
    assert redact("Your sign-in code: 493817") == "Your sign-in code: [redacted]"
    assert redact("sign-in code is 493817. It expires") == "sign-in code is [redacted]. It expires"
    assert redact('{"otp": "493817", "code":"120034"}') == (
        '{"otp": "[redacted]", "code":"[redacted]"}'
    )
    assert redact("status code 404 after 493817 ms") == "status code 404 after 493817 ms"


def test_redact_masks_luhn_valid_card_numbers_and_cvc_fields() -> None:
    assert redact("card 4242424242424242 ok") == "card ****4242 ok"
    assert redact("card 4242 4242 4242 4242 ok") == "card ****4242 ok"
    assert redact("card 4000-0000-0000-0002") == "card ****0002"
    assert redact("{'number': '4242424242424242', 'cvc': '123'}") == (
        "{'number': '****4242', 'cvc': '[redacted]'}"
    )
    assert redact("cvv=9876, CVC: 321") == "cvv=[redacted], CVC: [redacted]"
    # A long number that fails the Luhn check is no card number.
    assert redact("amount 4242424242424241") == "amount 4242424242424241"


def test_redact_replaces_sensitive_query_parameters() -> None:
    line = (
        "GET /x?to=ann%40example.com&token=abc&code=493817&api_key=k&password=p"
        "&email=a@b.co&limit=5 HTTP/1.1"
    )

    assert redact(line) == (
        "GET /x?to=[redacted]&token=[redacted]&code=[redacted]&api_key=[redacted]"
        "&password=[redacted]&email=[redacted]&limit=5 HTTP/1.1"
    )


def test_redact_replaces_invitation_tokens_in_paths() -> None:
    line = '"POST /api/v1/team/invitations/token/Zk3_q-9Ab/accept HTTP/1.1" 200 /invite/Zk3_q-9Ab'

    redacted = redact(line)

    assert "Zk3_q-9Ab" not in redacted
    assert "/team/invitations/token/[redacted]/accept" in redacted
    assert redacted.endswith("/invite/[redacted]")


def test_redact_replaces_email_addresses_secret_fields_and_url_passwords() -> None:
    assert redact("mail to Ann.Lee+shop@example.co.uk now") == "mail to [email] now"
    assert redact('{"sessionToken": "abc", "password": "hunter2"}') == (
        '{"sessionToken": "[redacted]", "password": "[redacted]"}'
    )
    assert redact("client_secret=s3cr3t; next") == "client_secret=[redacted]; next"
    assert redact("smtp://mailer:p4ss@smtp.example.com:587") == (
        "smtp://mailer:[redacted]@smtp.example.com:587"
    )


def test_redact_leaves_ids_times_and_ordinary_words_alone() -> None:
    line = (
        "payment pay_01JD8Z3K4M5N6P7Q8R9S0T1V2W of co_01JD8Z3K4M5N6P7Q8R9S0T1V2W at "
        "2026-11-22T04:38:00.123Z failed: status code 409, Basic checks passed, 2500 USD"
    )

    assert redact(line) == line


def test_redact_twice_changes_nothing_more() -> None:
    line = f"Bearer {JWT} code: 493817 to ann@example.com card 4242424242424242 ?token=x"

    assert redact(redact(line)) == redact(line)


def test_filter_formats_the_arguments_then_redacts_and_clears_them() -> None:
    record = _record("verify %s with %r for %s", "493817", {"code": "493817"}, "ann@example.com")

    kept = RedactSecrets().filter(record)

    assert kept is True
    assert record.args is None
    assert record.msg == "verify 493817 with {'code': '[redacted]'} for [email]"
    assert logging.Formatter("%(message)s").format(record) == record.msg


def test_filter_redacts_the_exception_text_and_drops_the_exception() -> None:
    try:
        raise ValueError(f"refused Bearer {JWT} for ann@example.com")
    except ValueError:
        record = _record("failed")
        record.exc_info = sys.exc_info()

    RedactSecrets().filter(record)
    line = logging.Formatter("%(message)s").format(record)

    assert record.exc_info is None
    assert "ValueError: refused Bearer [redacted] for [email]" in line
    assert JWT not in line and "ann@example.com" not in line


def test_filter_redacts_string_fields_passed_with_extra() -> None:
    record = _record("done", first_request_line="GET /x?token=abc HTTP/1.1", status=200)

    RedactSecrets().filter(record)

    assert record.__dict__["first_request_line"] == "GET /x?token=[redacted] HTTP/1.1"
    assert record.__dict__["status"] == 200


def test_filter_still_logs_a_record_whose_arguments_do_not_format() -> None:
    record = _record("code %d for %s", "493817")

    assert RedactSecrets().filter(record) is True
    assert "493817" not in record.getMessage()


def test_install_redaction_puts_one_filter_on_each_handler_of_the_logger() -> None:
    logger = logging.getLogger("tests.install_redaction")
    logger.propagate = False
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        install_redaction(logger)
        install_redaction(logger)
        logger.warning("session %s", JWT)
    finally:
        logger.removeHandler(handler)

    assert sum(isinstance(f, RedactSecrets) for f in handler.filters) == 1
    assert stream.getvalue() == "session [jwt]\n"


class _Keep(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_dev_mailbox_logs_that_a_mail_arrived_but_not_its_address_or_code() -> None:
    # given a handler on the mailbox's own logger, which sees the record before any filter
    logger = logging.getLogger("mps.adapters.mail")
    records: list[logging.LogRecord] = []
    handler = _Keep(records)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        # when a sign-in email is sent
        mail = Mail("ann@example.com", "Your sign-in code: 493817", "Code 493817.", otp="493817")
        await DevMailbox().send(mail)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

    # then the line names the message, and nothing of what it says or to whom
    assert [r.getMessage() for r in records] == [
        f"dev mail {mail.id} kept in the dev mailbox (GET /api/v1/dev/mailbox)"
    ]


def test_run_py_installs_the_filter_on_the_logging_it_configures() -> None:
    # given run.py's logging set up, when a record carrying a token is logged
    result = logged_by_run_py(f"logging.getLogger('probe').warning('verify with %s', '{JWT}')")

    # then the line is there, redacted
    assert "WARNING probe: verify with [jwt]" in result.stderr, result.stderr
    assert JWT not in result.stderr


def test_a_served_sign_in_leaves_no_address_code_or_token_in_the_server_log(
    tmp_path: Path,
) -> None:
    # given run.py serving, its whole output kept
    with RunningServer(tmp_path) as server:
        # when someone signs up, reads the code, signs in and uses the session
        email = "log.check@example.com"
        signup = server.call("/api/v1/auth/signup", {"companyName": "Log Ltd", "email": email})
        code = server.call(f"/api/v1/dev/mailbox?to={email}")["data"][0]["otp"]
        verify = {"loginId": signup["loginId"], "code": code}
        token = server.call("/api/v1/auth/otp/verify", verify)["sessionToken"]
        server.call("/api/v1/auth/me", token=token)

    # then the log shows the mail arrived, and holds none of the secrets
    served = server.log_text()
    assert "dev mail msg_" in served
    for secret in (email, code, token):
        assert secret not in served


def test_log_guard_finds_a_secret_but_not_a_code_inside_a_longer_number() -> None:
    lines = ["INFO x: paid 14938170 cents", "INFO y: ok", f"INFO z: token {JWT}"]

    found = leaks(lines, {"493817", JWT, "absent"})

    assert found == [(JWT, f"INFO z: token {JWT}")]
    assert leaks(["code 493817."], {"493817"}) == [("493817", "code 493817.")]


@pytest.mark.parametrize("secret", ["493817", JWT])
def test_log_guard_ignores_lines_where_the_secret_is_absent(secret: str) -> None:
    assert leaks(["INFO a: nothing here", "INFO b: code [redacted]"], {secret}) == []
