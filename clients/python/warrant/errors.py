# SPDX-License-Identifier: BSD-2-Clause
"""The typed errors of the decider library."""


class WarrantError(Exception):
    """Every error this library raises."""


class RecordError(WarrantError, ValueError):
    """The record would break warrantd(7) §3.1: the worker would dead-letter
    it (record-invalid). `field` names the member, as the worker's detail does."""

    code = "record-invalid"

    def __init__(self, field, message):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class UnknownActionError(RecordError):
    """The action names no [action NAME] section (unknown-action)."""

    code = "unknown-action"


class RecordExistsError(WarrantError):
    """The recordId is taken: a record id is never reused."""

    def __init__(self, record_id):
        super().__init__(f"recordId: decision {record_id} exists already")
        self.field = "recordId"
        self.record_id = record_id


class KeyFileError(WarrantError):
    """The signing key cannot be read or does not fit the algorithm."""


class ConfigError(WarrantError):
    """The INI file or the arguments are not usable."""


class NotPermittedError(WarrantError):
    """The decider's Redis role may not do this (warrantd(7) §11: cancel and
    retry are the operator's)."""


class WaitTimeout(WarrantError, TimeoutError):
    """wait() gave up before the record reached a terminal state."""

    def __init__(self, record_id, status):
        super().__init__(f"{record_id}: not finished (state {status.get('state') if status else None})")
        self.record_id = record_id
        self.status = status
