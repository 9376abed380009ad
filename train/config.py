"""Loading a training configuration: YAML and dotted overrides, checked against the schema.

The schema is :mod:`orderchaos.train.config_schema` (its sections are importable from here
too). The fields' help is shown by ``orderchaos train --help-config`` and
:func:`reference_table`. Loading refuses unknown keys (naming the close
matches), values of the wrong type and impossible values, always naming the key.

Overrides are ``key=value`` or ``--key value`` with dotted keys, e.g. ``optim.lr=1e-3`` or
``--selfplay.games 64``; values are parsed as YAML scalars (``true``, ``1e-3``, ``[a, b]``).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from orderchaos.train.config_schema import (  # noqa: F401 (the sections are re-exported)
    EvalConfig,
    MCTSConfig,
    MistakesConfig,
    NetworkConfig,
    OptimConfig,
    PPOConfig,
    ReplayConfig,
    RETIRED_KEYS,
    RunConfig,
    SelfPlayConfig,
    TrainConfig,
)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the offending key."""


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_section(kind: Any) -> bool:
    return dataclasses.is_dataclass(kind)


def _all_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name, kind in _hints(cls).items():
        if _is_section(kind):
            keys.extend(_all_keys(kind, f"{prefix}{name}."))
        else:
            keys.append(f"{prefix}{name}")
    return keys


def _unknown_key_error(key: str) -> ConfigError:
    keys = _all_keys()
    close = difflib.get_close_matches(key, keys, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return ConfigError(f"unknown config key {key!r}; {hint}accepted keys: {', '.join(keys)}")


def _check_retired(key: str, value: Any) -> None:
    """Accept a retired key that holds its fixed value (so configs saved by older runs still
    load and resume unchanged) and refuse one that asks for another value, which would
    otherwise be silently ignored."""
    fixed = RETIRED_KEYS[key]
    if type(value) is not type(fixed) and not (isinstance(fixed, float) and type(value) is int):
        same = False
    else:
        same = value == fixed
    if not same:
        raise ConfigError(f"config key {key!r} was removed: it is fixed at {fixed!r}, got {value!r}; delete the key")


def _type_name(kind: Any) -> str:
    if _optional_of(kind) is not None:
        return f"{_type_name(_optional_of(kind))} or null"
    return getattr(kind, "__name__", str(kind))


def _optional_of(kind: Any) -> Any:
    """``X`` for ``X | None``, else None."""
    args = typing.get_args(kind)
    if type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None))
    return None


def _coerce(key: str, kind: Any, value: Any) -> Any:
    """Check ``value`` against the field type, converting int -> float where harmless."""
    if _optional_of(kind) is not None:
        return None if value is None else _coerce(key, _optional_of(kind), value)
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, str):  # PyYAML reads 1e-3 (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(f"config key {key!r} must be a finite number, got {value!r}")
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    elif typing.get_origin(kind) is list:
        (item_kind,) = typing.get_args(kind)
        if isinstance(value, list):
            return [_coerce(f"{key}[{i}]", item_kind, v) for i, v in enumerate(value)]
        if isinstance(value, str):  # a single spec given where a list is expected
            return [value]
    raise ConfigError(
        f"config key {key!r} must be {_type_name(kind)}, got {type(value).__name__} {value!r}"
    )


def _check_rules(key: str, value: Any, rules: dict[str, Any]) -> None:
    """Range, choice and pattern checks from the field metadata."""
    if value is None:  # null, where the type allows it
        return
    pattern = rules.get("pattern")
    if pattern is not None and not re.fullmatch(pattern, value):
        raise ConfigError(f"config key {key!r} must be {rules.get('shape', pattern)}, got {value!r}")
    lo, hi = rules.get("min"), rules.get("max")
    if lo is not None:
        too_low = value <= lo if rules.get("exclusive") else value < lo
        if too_low:
            relation = ">" if rules.get("exclusive") else ">="
            raise ConfigError(f"config key {key!r} must be {relation} {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise ConfigError(f"config key {key!r} must be <= {hi}, got {value!r}")
    if rules.get("agent_specs"):
        _check_agent_specs(key, value)
    choices = rules.get("choices")
    if choices is not None and isinstance(value, list):
        for item in value:
            _check_rules(key, item, {"choices": choices})
    elif choices is not None and value not in choices:
        raise ConfigError(
            f"config key {key!r} must be one of {', '.join(choices)}, got {value!r}"
        )


def _check_agent_specs(key: str, specs: list[str]) -> None:
    """Every entry must be an agent spec the registry accepts (checked when the config is
    read, so that a bad spec stops the run before its first iteration, not at its end)."""
    from orderchaos.agents.registry import SpecError, resolve

    for i, spec in enumerate(specs):
        try:
            resolve(spec)
        except SpecError as exc:
            raise ConfigError(f"config key {key}[{i}]: {exc}") from None


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(
            f"config section {prefix.rstrip('.') or '<root>'!r} must be a mapping, "
            f"got {type(data).__name__}"
        )
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        if key in RETIRED_KEYS:
            _check_retired(key, value)
            continue
        if name not in hints:
            raise _unknown_key_error(key)
        kind = hints[name]
        if _is_section(kind):
            kwargs[name] = _build(kind, value if value is not None else {}, f"{key}.")
        else:
            coerced = _coerce(key, kind, value)
            _check_rules(key, coerced, dict(fields[name].metadata))
            kwargs[name] = coerced
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any] | None) -> TrainConfig:
    """Build a validated TrainConfig from a nested dict (missing keys take defaults)."""
    return _build(TrainConfig, data or {}, "")


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The config as a plain nested dict (YAML/JSON friendly)."""
    return dataclasses.asdict(config)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``key=value`` and ``--key value`` items into a nested dict of YAML-typed values.

    Raises ConfigError for an item that is neither form, or a ``--key`` with no value.
    """
    nested: dict[str, Any] = {}
    tokens = list(items)
    i = 0
    while i < len(tokens):
        item = tokens[i]
        if item.startswith("--"):
            body = item[2:]
            if "=" in body:
                key, raw = body.split("=", 1)
            else:
                if i + 1 >= len(tokens):
                    raise ConfigError(f"override --{body} needs a value: --{body} VALUE")
                key, raw = body, tokens[i + 1]
                i += 1
        elif "=" in item:
            key, raw = item.split("=", 1)
        else:
            raise ConfigError(
                f"malformed override {item!r}: use key=value or --key value with a dotted key, "
                f"e.g. optim.lr=1e-3"
            )
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise ConfigError(f"malformed override {item!r}: empty key")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"override {key}={raw!r}: cannot parse the value ({exc})") from None
        _set_dotted(nested, key, value)
        i += 1
    return nested


def _set_dotted(nested: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = nested
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key!r} conflicts with an earlier value for {part!r}")
        node = child
    node[parts[-1]] = value


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``extra`` into a copy of ``base`` (``extra`` wins)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _yaml_fault(exc: yaml.YAMLError) -> str:
    """Where and what in one line (``: line 2, column 6: expected ',' or ']'``); PyYAML's
    own text quotes the lines around it over several."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return ": " + ": ".join(part for part in (where, problem) if part) if where or problem else ""


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping from ``path`` with errors that name the file."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"config file {str(p)!r} is a directory; give a YAML file")
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} does not exist")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {str(p)!r} is not UTF-8 text (byte {exc.start}); give a YAML file"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {str(p)!r} cannot be read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(p)!r} is not valid YAML{_yaml_fault(exc)}") from None
    except RecursionError:
        raise ConfigError(f"config file {str(p)!r} is nested too deeply to read") from None
    if data is None or data == {}:
        raise ConfigError(f"config file {str(p)!r} holds no keys; give at least one (e.g. algorithm: "
                          f"alphazero), or start from configs/alphazero.yaml")
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold a mapping of sections")
    return data


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Load ``path`` (or the defaults when None), apply overrides, validate everything."""
    data = read_yaml(path) if path is not None else {}
    return config_from_dict(merge(data, parse_overrides(overrides)))


def save_config(config: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (atomically)."""
    from orderchaos.files import atomic_write_bytes

    text = yaml.safe_dump(config_to_dict(config), sort_keys=False)
    atomic_write_bytes(Path(path), text.encode())


def _documented_fields(cls: type = TrainConfig, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, field, type)`` of every field in file order; a section comes before
    its keys, with its own entry (its type a dataclass)."""
    out: list[tuple[str, Any, Any]] = []
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        out.append((f"{prefix}{f.name}", f, kind))
        if _is_section(kind):
            out.extend(_documented_fields(kind, f"{prefix}{f.name}."))
    return out


def _default_of(key: str) -> Any:
    value: Any = TrainConfig()
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _rules_of(f: Any) -> str:
    return ", ".join(f"{r}={f.metadata[r]}" for r in ("min", "max", "choices") if r in f.metadata)


def help_text() -> str:
    """Every config key with its type, default and help, one per line, by section."""
    lines: list[str] = []
    for key, f, kind in _documented_fields():
        if _is_section(kind):
            lines.append(f"\n[{key}] {f.metadata.get('help', '')}")
            continue
        rules = _rules_of(f)
        extra = f" ({rules})" if rules else ""
        lines.append(
            f"  {key}: {_type_name(kind)} = {_default_of(key)!r}{extra}\n"
            f"      {f.metadata.get('help', '')}"
        )
    return "\n".join(lines) + "\n"


def reference_table() -> str:
    """Every config key as a markdown table (key, type, default, accepted values, help), by
    section: the key reference of ``docs/training.md`` (a test keeps the two the same)."""
    rows = ["| key | type | default | accepted | meaning |", "|---|---|---|---|---|"]
    for key, f, kind in _documented_fields():
        help_ = str(f.metadata.get("help", "")).replace("|", "\\|")
        if _is_section(kind):
            rows.append(f"| **`{key}`** | section | | | {help_} |")
            continue
        rules = _rules_of(f).replace("|", "\\|")
        rows.append(f"| `{key}` | {_type_name(kind)} | `{_default_of(key)!r}` | {rules} | {help_} |")
    return "\n".join(rows) + "\n"
