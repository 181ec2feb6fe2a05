"""Config YAML in and out: the safe loader, ``--set`` overrides, reading an experiment file into a
mapping, and the resolved config's YAML text.

Nothing here builds an :class:`~fltrust.config.ExperimentConfig` (that is
:func:`fltrust.config.load_config`, which reads the file with :func:`read_config_file`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from fltrust.config.checks import ConfigError
from fltrust.settings import show

if TYPE_CHECKING:
    from fltrust.config.experiment import ExperimentConfig


class ConfigLoader(yaml.SafeLoader):
    r"""``yaml.SafeLoader`` that rejects a key given twice in one mapping (PyYAML keeps the last).

    Every config load uses it (:func:`load_config`, ``--set`` values). Keys brought in by a merge
    key (``<<: *defaults``) may be overridden, as YAML intends.

    Examples
    --------
    >>> yaml.load("a: 1\nb: 2", Loader=ConfigLoader)
    {'a': 1, 'b': 2}
    >>> try:
    ...     yaml.load("a: 1\na: 2", Loader=ConfigLoader)
    ... except yaml.YAMLError as exc:
    ...     print(exc.problem)
    duplicate key 'a' (lines 1 and 2): keep one of them
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first_line:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"duplicate key {show(key)} (lines {first_line[key]} and {line}): keep one of them",
                        key_node.start_mark)
                first_line[key] = line
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                continue
        return super().construct_mapping(node, deep=deep)


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Parse ``["training.rounds=3", "data.name=cifar10"]`` into a dict (values as YAML)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like section.key=value")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = yaml.load(raw, Loader=ConfigLoader) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"--set {item!r}: the value {raw!r} is not valid YAML ({_yaml_problem(exc)}); "
                f"close brackets and quotes, or quote a plain string"
            ) from None
    return out


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """The short reason of a YAML error, without PyYAML's multi-line context."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    return str(problem or exc).strip().splitlines()[0]


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> None:
    """Apply dotted-path overrides to a nested dict in place (unknown paths are caught later)."""
    for dotted, value in overrides.items():
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {dotted!r}: {part!r} is not a section")
            node = child
        node[parts[-1]] = value


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of an experiment YAML file, read with :class:`ConfigLoader`.

    Parameters
    ----------
    path : str or Path
        The experiment's YAML file.

    Returns
    -------
    dict
        Its sections, not yet checked (:func:`fltrust.config.load_config` builds the config).

    Raises
    ------
    ConfigError
        The file is missing, a folder, unreadable, empty, not valid YAML (``file:line:column``)
        or not a mapping.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {str(path)!r} is a folder; pass an experiment YAML file")
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.load(path.read_text(), Loader=ConfigLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: invalid YAML: {_yaml_problem(exc)}; fix the syntax at that line") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"config file {str(path)!r} cannot be read ({why}); check its permissions and encoding") from None
    if data is None:
        raise ConfigError(f"config file {str(path)!r} is empty; write the experiment's sections into it "
                          f"(see fltrust/configs/demo/*.yaml), or '{{}}' for all defaults")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data


def config_yaml(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML text (what every run folder's ``config.yaml`` holds)."""
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)


def save_config(cfg: ExperimentConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (atomically)."""
    from fltrust.core.io import atomic_write_text

    atomic_write_text(Path(path), config_yaml(cfg))
