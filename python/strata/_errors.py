"""Errors of strata.load and Trace.analysis (here, not in _analysis.py, so that `import strata`
names them without importing pandas)."""


class StrataError(RuntimeError):
    """A trace could not be opened or read (the message names the file and what to do)."""


class MissingInputError(StrataError):
    """The trace lacks what an analysis needs (e.g. device activity); the message says what to record."""
