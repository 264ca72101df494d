"""Errors that are the user's to fix: the CLI prints them as one clear message, no traceback."""

from brokerscope.next_step import MissingStep
from collectors.gc.limits import GcInputError
from collectors.jolokia import UnsafeRequestError
from collectors.recording import RecordingError
from lakehouse.store import LakehouseError
from settings import ConfigError


def _user_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [ConfigError, MissingStep, RecordingError, UnsafeRequestError, GcInputError, FileNotFoundError]
    try:

        errors.append(LakehouseError)
    except ImportError:  # store not importable (missing deltalake): the import error itself is clearer
        pass
    return tuple(errors)


USER_ERRORS = _user_errors()
