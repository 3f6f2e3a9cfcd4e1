"""The jail's report (schema tooljail.report/v1) with attribute access."""


class Report:
    """A read-only view of the report: ``report.status``,
    ``report.limits.memory_bytes``, ``report.violations[0].syscall``.

    Fields the jail did not measure are absent from the report (never a made-up
    zero), so reading one raises AttributeError; use ``report.get(name)`` for
    optional fields. ``raw`` is the parsed JSON, a plain dict.
    """

    __slots__ = ("raw",)

    def __init__(self, raw):
        object.__setattr__(self, "raw", raw)

    def __getattr__(self, name):
        if name.startswith("__") or name == "raw":
            raise AttributeError(name)  # copy and pickle probe these
        try:
            return _wrap(self.raw[name])
        except KeyError:
            raise AttributeError(
                "the report has no field %r (present: %s)" % (name, ", ".join(self.raw))
            ) from None

    def __setattr__(self, name, value):
        raise AttributeError("the report is read-only")

    def __reduce__(self):
        return Report, (self.raw,)

    def __getitem__(self, name):
        return _wrap(self.raw[name])

    def __contains__(self, name):
        return name in self.raw

    def get(self, name, default=None):
        return _wrap(self.raw[name]) if name in self.raw else default

    def __eq__(self, other):
        return isinstance(other, Report) and other.raw == self.raw

    def __repr__(self):
        return "Report(%r)" % (self.raw,)


def _wrap(value):
    if isinstance(value, dict):
        return Report(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value
