"""From Python arguments to what the scenario loader takes: the scenario's text and the
command line's ``KEY=VALUE`` overrides.

Overrides are the CLI's ``--set`` keys. Python spells them two ways: a dict with the
dotted keys (``{"device.bql.limit_min": 8}``), or keyword arguments with ``__`` for
``.`` (``device__bql__limit_min=8``, ``traffic__0__rate="50kpps"``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Tuple, List

from . import _darkbuf
from .errors import ScenarioError

#: What a scenario argument may be.
SCENARIO_HELP = "give a path to a scenario TOML file, the TOML text itself, or a dict of its keys"


def source(scenario: Any) -> Tuple[str, str]:
    """``(name, text)`` of a scenario: a path (``str`` or ``os.PathLike``), TOML text,
    or a dict. A ``str`` is a path when it is one line and names a file or has no
    ``=`` in it; otherwise it is TOML text, named ``<string>`` in diagnostics. A dict
    is named ``<dict>``."""
    if isinstance(scenario, Mapping):
        return "<dict>", _darkbuf.dict_to_toml(dict(scenario))
    if isinstance(scenario, os.PathLike):
        return _darkbuf.read_source(os.fspath(scenario))
    if isinstance(scenario, str):
        _check_unicode(scenario, "scenario", "")
        one_line = "\n" not in scenario
        if one_line and ("=" not in scenario or os.path.isfile(scenario)):
            return _darkbuf.read_source(scenario)
        return "<string>", scenario
    raise TypeError(f"scenario: a {type(scenario).__name__}; {SCENARIO_HELP}")


def _check_unicode(text: str, where: str, key: str) -> None:
    """A str with a lone surrogate ("\\ud800") has no UTF-8, so it cannot reach the Rust
    side (pyo3 would raise a UnicodeEncodeError that names nothing)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ScenarioError(
            f"{where}: {text[max(0, e.start - 20):e.end + 20]!r} is not valid Unicode "
            f"(a lone surrogate at index {e.start}); give text that is",
            key=key, help="valid Unicode text", kind="type",
        ) from None


def _check_key(key: Any, where: str) -> str:
    if isinstance(key, str):
        _check_unicode(key, where, "")
    if not isinstance(key, str) or not key.strip() or "=" in key:
        raise ScenarioError(
            f"{where}: {key!r} is not a dotted scenario key; write keys such as "
            "\"device.bql.limit_min\" or \"traffic.0.rate\"",
            key=str(key),
            help='keys such as "device.bql.limit_min" or "traffic.0.rate"',
            kind="syntax",
        )
    return key


def overrides(set: Optional[Mapping[str, Any]], keywords: Mapping[str, Any]) -> List[str]:
    """The ``KEY=VALUE`` strings of ``set`` (dotted keys) then ``keywords`` (``__`` for
    ``.``), values written as ``--set`` reads them."""
    items = []
    if set is not None:
        if not isinstance(set, Mapping):
            raise TypeError("set: a dict of dotted keys to values, e.g. {'device.bql.limit_min': 8}")
        items += [(_check_key(k, "set"), v) for k, v in set.items()]
    for k in keywords:
        _check_unicode(k, "keyword", "")
    items += [(k.replace("__", "."), v) for k, v in keywords.items()]
    return [f"{k}={_darkbuf.override_text(v, k)}" for k, v in items]


def sweeps(spec: Optional[Mapping[str, Any]]) -> List[str]:
    """``{"key": [values]}`` as the CLI's ``--set KEY=V1,V2,...`` (one axis per key, in
    the dict's order; the first key varies slowest)."""
    if spec is None:
        return []
    if not isinstance(spec, Mapping):
        raise TypeError("sweep: a dict of dotted keys to lists of values, e.g. {'consumer.nrules': [0, 3500]}")
    out = []
    points = 1
    for key, values in spec.items():
        _check_key(key, "sweep")
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
            raise ScenarioError(
                f"`{key}`: sweep values must be a list, found {type(values).__name__}; "
                f"write {{{key!r}: [V1, V2, ...]}} (a single value goes in set= or a keyword)",
                key=key, help="a list of values", kind="type",
            )
        texts = []
        for v in values:
            texts.append(_darkbuf.override_text(v, key))
            # Every point runs at least once: past the runs a command may have, the sweep
            # is refused before its points are planned (planning 10^5 points would take
            # minutes and gigabytes first).
            if points * len(texts) > _darkbuf.MAX_TOTAL_RUNS:
                raise ScenarioError(
                    f"the sweep has more than {_darkbuf.MAX_TOTAL_RUNS:,} points (`{key}` alone "
                    f"has {len(texts):,} or more values), so more than {_darkbuf.MAX_TOTAL_RUNS:,} runs; "
                    f"at most {_darkbuf.MAX_TOTAL_RUNS:,} runs per command: split the sweep",
                    key=key, help=f"at most {_darkbuf.MAX_TOTAL_RUNS:,} points", kind="value",
                )
        if not texts:
            raise ScenarioError(f"`{key}`: the sweep has no values; give at least one",
                                key=key, help="a non-empty list", kind="value")
        points *= len(texts)
        # `darkbuf sweep --set K=V1,V2` splits at commas outside quotes and brackets, so
        # a quoted string or a list with commas is one value; refuse only a text that
        # the shared rule would split into several.
        for t in texts:
            swept, _ = _darkbuf.split_sets([f"{key}={t}"])
            if swept:
                raise ScenarioError(
                    f"`{key}`: the value {t} would split at its commas into several sweep values; "
                    "sweep it with a [sweep] table or [[variant]]s in the scenario instead",
                    key=key, help="values that stay one value in --set KEY=V1,V2", kind="value",
                )
        out.append(f"{key}={','.join(texts)}")
    return out
