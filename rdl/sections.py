"""A config section's dict as the settings object (a dataclass) it describes: one rule for
its keys, so that a misspelt setting fails naming itself and the section's settings."""
from __future__ import annotations

from dataclasses import fields


def settings_of(cls: type, value, section: str):
    """``cls(**value)``; a :class:`ValueError` naming ``section`` (``data.buckets``) where
    ``value`` has keys ``cls`` has no field for."""
    value = dict(value)
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(value) - names)
    if unknown:
        raise ValueError(f"{section}: unknown setting(s) {unknown}; the settings are "
                         f"{sorted(names)}")
    return cls(**value)
