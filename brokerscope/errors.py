"""Errors that are the user's to fix: the CLI prints them as one clear message, no traceback."""

from collectors.jolokia import UnsafeRequestError
from collectors.recording import RecordingError
from lakehouse.store import LakehouseError
from settings import ConfigError


def _user_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [ConfigError, RecordingError, UnsafeRequestError, FileNotFoundError]
    try:

        errors.append(LakehouseError)
    except ImportError:  # store not importable (missing deltalake): the import error itself is clearer
        pass
    return tuple(errors)


USER_ERRORS = _user_errors()
