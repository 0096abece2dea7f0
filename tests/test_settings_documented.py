"""Every ``PRECEDENT_*`` variable the README and docs/*.md name still takes effect, in the group
docs/configuration.md puts it in; and every variable the code reads is documented.

The names are parsed from the pages (not listed here), so a variable the docs gain or lose is
checked without editing this file. Each setting is set in the environment to a valid value
other than its default, the settings are loaded as the commands and the operator load them,
and the value must arrive in its group's field and nowhere else.
"""

from __future__ import annotations

import re
import types
import typing
from datetime import timedelta
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from precedent.errors import InputError
from precedent.settings import Settings, env_name, flat_names, load_settings

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONFIGURATION = ROOT / "docs" / "configuration.md"
NAME = re.compile(r"PRECEDENT_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_{])")

# Variables the pages name that are not settings: what reads each one (a path under the root).
NOT_SETTINGS = {
    "PRECEDENT_AS_OF": "operator/precedent/cli.py",  # precedent score --as-of
    "PRECEDENT_CRDS_DIR": "operator/precedent/sandbox_process.py",  # the sandbox's CRDs
    "PRECEDENT_DOCS_UPDATE": "tests/test_docs_examples.py",
    "PRECEDENT_BENCH_1M": "tests/bench/bench_index.py",
    "PRECEDENT_FAULT_REQUESTS": "tests/faults/test_sigkill.py",
    "PRECEDENT_FAULT_SEED": "tests/faults/test_sigkill.py",
    "PRECEDENT_GOLDEN_UPDATE": "tests/golden/test_golden_statuses.py",
    "PRECEDENT_TEST_KUBECONFIG": "tests/backends.py",  # the real-server suites on a given cluster
    "PRECEDENT_CONTROL_PLANE_BIN": "tests/backends.py",  # binaries built elsewhere
    "PRECEDENT_OPENSEARCH_HOME": "tests/opensearch_node.py",  # an OpenSearch installed elsewhere
}

# A weight that must sum to 1 with others moves together with one of them.
PARTNERS = {
    "confidence_weight_semantic": {"confidence_weight_labels": "0.6"},
    "confidence_weight_labels": {"confidence_weight_semantic": "0.6"},
    "confidence_weight_historical": {"confidence_weight_semantic": "0.5"},
}


def _documented() -> set[str]:
    return {name for page in PAGES for name in NAME.findall(page.read_text(encoding="utf-8"))}


def _groups_in_configuration() -> dict[str, str]:
    """Each variable of docs/configuration.md → the group its table names (``settings.X``)."""
    placed: dict[str, str] = {}
    group = None
    for line in CONFIGURATION.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"\*\*.+\*\* \(`settings\.([a-z_]+)`\)", line)
        if heading:
            group = heading.group(1)
        elif line.startswith("| `PRECEDENT_") and group is not None:
            for name in NAME.findall(line.split("|")[1]):
                placed[name] = group
    return placed


SETTINGS = {env_name(flat): flat for flat in flat_names()}
DOCUMENTED = _documented()
PLACED = _groups_in_configuration()


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    low = high = None
    for rule in info.metadata:
        if isinstance(rule, annotated_types.Ge | annotated_types.Gt):
            low = float(rule.ge if isinstance(rule, annotated_types.Ge) else rule.gt)  # type: ignore[arg-type]
        if isinstance(rule, annotated_types.Le | annotated_types.Lt):
            high = float(rule.le if isinstance(rule, annotated_types.Le) else rule.lt)  # type: ignore[arg-type]
    return low, high


def _other_value(info: FieldInfo) -> tuple[str, Any]:
    """A valid value other than the field's default: (as the environment holds it, as read)."""
    default = info.get_default(call_default_factory=True)
    kind = info.annotation
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    if typing.get_origin(kind) is typing.Literal:
        choice = next(c for c in typing.get_args(kind) if c != default)
        return str(choice), choice
    if kind is bool:
        return ("false", False) if default else ("true", True)
    low, high = _bounds(info)
    if kind is int:
        value = 7 if default is None else default + 1
        if high is not None and value > high:
            value = default - 1
        return str(value), value
    if kind is float:
        number = 0.25 if default is None else default / 2 if default else 0.5
        assert low is None or number >= low
        assert high is None or number <= high
        return str(number), number
    if kind is timedelta:
        return "3h", timedelta(hours=3)
    if kind is SecretStr:
        return "not-the-default-secret", "not-the-default-secret"
    if kind is Path:
        return "/var/lib/precedent/elsewhere", Path("/var/lib/precedent/elsewhere")
    if kind is str:
        return "other-value", "other-value"
    if typing.get_origin(kind) is dict:
        weights = {"critical": 0.9, "high": 0.7, "medium": 0.4, "low": 0.2}
        return '{"critical": 0.9, "high": 0.7, "medium": 0.4, "low": 0.2}', weights
    raise AssertionError(f"no test value for {info.annotation}")


def _values(settings: Settings) -> dict[str, Any]:
    found = {}
    for flat, (group, field) in flat_names().items():
        value = getattr(getattr(settings, group), field)
        found[flat] = value.get_secret_value() if isinstance(value, SecretStr) else value
    return found


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for key in list(os.environ):
        if key.upper().startswith("PRECEDENT_"):
            monkeypatch.delenv(key)
    return monkeypatch


def test_the_pages_name_the_settings_and_the_known_others() -> None:
    assert len(DOCUMENTED & SETTINGS.keys()) >= 80  # the parse found the tables
    strangers = DOCUMENTED - SETTINGS.keys() - NOT_SETTINGS.keys()
    assert not strangers, f"documented but neither a setting nor read anywhere: {strangers}"


@pytest.mark.parametrize("name", sorted(NOT_SETTINGS))
def test_a_documented_variable_that_is_no_setting_is_read_where_it_is_said(name: str) -> None:
    assert name in DOCUMENTED
    source = (ROOT / NOT_SETTINGS[name]).read_text(encoding="utf-8")
    assert re.search(rf"[\"']{name}[\"']", source), f"{name} is not read in {NOT_SETTINGS[name]}"


@pytest.mark.parametrize("name", sorted(DOCUMENTED & SETTINGS.keys()))
def test_every_documented_setting_takes_effect_in_its_group(
    name: str, clean_environment: pytest.MonkeyPatch
) -> None:
    flat = SETTINGS[name]
    group, field = flat_names()[flat]
    assert PLACED.get(name) == group, f"docs/configuration.md puts {name} in {PLACED.get(name)}"
    model: type[BaseModel] = type(getattr(Settings(), group))
    raw, expected = _other_value(model.model_fields[field])
    defaults = _values(load_settings())
    assert defaults[flat] != expected
    clean_environment.setenv(name, raw)
    for partner, value in PARTNERS.get(flat, {}).items():
        clean_environment.setenv(env_name(partner), value)
    loaded = _values(load_settings())
    assert loaded[flat] == expected
    changed = {f for f in loaded if loaded[f] != defaults[f]}
    assert changed == {flat, *PARTNERS.get(flat, {})}


def test_a_lower_case_variable_takes_effect_too(clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv("precedent_risk_model", "seed")
    assert load_settings().risk.model == "seed"


def test_every_setting_is_documented_in_its_group() -> None:
    assert set(SETTINGS) <= set(PLACED), set(SETTINGS) - set(PLACED)


def test_no_variable_the_code_reads_is_undocumented() -> None:
    read = set(SETTINGS)
    for root in (ROOT / "operator", ROOT / "sandbox" / "src"):
        for path in root.rglob("*.py"):
            read |= set(re.findall(r"[\"'](PRECEDENT_[A-Z0-9_]*[A-Z0-9])[\"']", path.read_text()))
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        read |= set(re.findall(r"environ\.get\(\s*\"(PRECEDENT_[A-Z0-9_]+)\"", text))
    assert read - DOCUMENTED == set()


def test_a_bad_value_names_its_variable(clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv("PRECEDENT_MEMORY_TIMEOUT_MS", "0")
    clean_environment.setenv("PRECEDENT_RANKING_PRIORITY_WEIGHTS", "{not json")
    with pytest.raises(InputError) as error:
        load_settings()
    assert "PRECEDENT_MEMORY_TIMEOUT_MS: " in str(error.value)
    assert "PRECEDENT_RANKING_PRIORITY_WEIGHTS: not a JSON object" in str(error.value)


def test_a_rule_across_variables_still_holds(clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv("PRECEDENT_CONFIDENCE_WEIGHT_SEMANTIC", "0.9")
    with pytest.raises(InputError, match="sum"):
        load_settings()


def test_overrides_are_validated_like_the_environment_and_win_over_it(
    clean_environment: pytest.MonkeyPatch,
) -> None:
    clean_environment.setenv("PRECEDENT_RISK_MODEL", "seed")
    assert load_settings().risk.model == "seed"
    assert load_settings({"risk_model": "default"}).risk.model == "default"
    with pytest.raises(InputError, match=r"^--cluster: .*253"):
        load_settings({"cluster_name": "x" * 300}, names={"cluster_name": "--cluster"})
    with pytest.raises(ValueError, match="not settings: colour"):
        load_settings({"colour": "red"})


def test_groups_are_frozen_and_small() -> None:
    settings = Settings()
    for group in type(settings).model_fields:
        model = type(getattr(settings, group))
        assert len(model.model_fields) <= 20, group
        assert model.model_config.get("frozen") is True, group
