"""cairn's distribution name, where a user reads or types it: a new bundle's files, its layer's pin, the
repository's files. The name is ``cairn-lambda`` (``cairn`` on the package index is another project).

A bundle's layer pins the installed cairn by version; only a cairn that is not a release (installed from a
folder, a local wheel, or with a development version) also ships its wheel in ``layers/wheels``. Which one
the installed cairn is comes from its metadata: these tests put a distribution's metadata of their own first on
the path, as pip would have written it for a release or for a checkout.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from cairn import distribution
from cairn.bundle import init, wheel

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "layers" / "cairn" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
REGISTRY_HOSTS = re.compile(
    "|".join(
        re.escape(".".join(parts))
        for parts in (("pypi", "org"), ("pypi", "python", "org"), ("pythonhosted", "org"), ("npmjs", "org"))
    ),
    re.IGNORECASE,
)
"""The package registries' hosts, spelled here in parts so that this file names none of them."""
BARE_NAME = re.compile(r"""pip install (-U )?["']?cairn(\[|["'\s]|$)""", re.MULTILINE)
"""``pip install cairn`` or ``"cairn[dev]"``: the other project's name where cairn-lambda is meant."""


def installed_as(site: Path, version: str, *, from_folder: bool) -> None:
    """Metadata of cairn-lambda ``version`` in ``site``, as pip writes it for a release (from the index) or for an
    install from a folder (its ``direct_url.json``)."""
    info = site / f"cairn_lambda-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: cairn-lambda\nVersion: {version}\n")
    if from_folder:
        (info / "direct_url.json").write_text(json.dumps({"url": "file:///src/cairn", "dir_info": {}}))


@pytest.fixture
def released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    installed_as(tmp_path / "site", "7.8.9", from_folder=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return "7.8.9"


def test_the_distribution_is_cairn_lambda_with_the_version_written_in_its_project_file() -> None:
    assert PROJECT["name"] == distribution.NAME == "cairn-lambda"
    assert distribution.source_version() == PROJECT["version"]
    assert [dependency for dependency in PROJECT["optional-dependencies"]["dev"] if "cairn" in dependency] == [
        "cairn-lambda[aws]"
    ]
    assert distribution.wheel_stem() == "cairn_lambda"


def test_a_new_bundle_names_the_distribution_and_pins_the_released_version(tmp_path: Path, released: str) -> None:
    report = init.init_bundle(init.Options(folder=tmp_path / "shop", pipeline=None))

    bundle = tmp_path / "shop"
    requirements = (bundle / "layers" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert requirements[-1] == f"cairn-lambda=={released}"
    assert [line for line in requirements if line.startswith("cairn")] == [f"cairn-lambda=={released}"]
    assert not (bundle / "layers" / "wheels").exists(), "a release comes from the package index, not a wheel"
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert f'pip install "cairn-lambda[dev]=={released}"' in readme
    assert 'pip install -U "cairn-lambda[dev]"' in readme
    for relative in report.written:
        text = (bundle / relative).read_text(encoding="utf-8")
        assert not BARE_NAME.search(text), f"{relative} tells a user to install the other project's cairn"
        assert not REGISTRY_HOSTS.search(text), f"{relative} names a package registry's host"
    assert f"cairn-lambda=={released}, from the package index" in init.summary(init.Options(bundle), report)[0]


def test_a_cairn_that_is_not_a_release_also_ships_its_wheel_of_the_pinned_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed_as(tmp_path / "site", "7.9.0", from_folder=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    bundle = tmp_path / "shop"
    init.init_bundle(init.Options(folder=bundle, pipeline=None))

    assert (bundle / "layers" / "requirements.txt").read_text(encoding="utf-8").splitlines()[-1] == (
        "cairn-lambda==7.9.0"
    )
    assert [path.name for path in (bundle / "layers" / "wheels").iterdir()] == ["cairn_lambda-7.9.0-py3-none-any.whl"]


def test_moving_to_a_release_drops_the_wheel_of_an_unreleased_cairn_and_of_the_former_name(
    tmp_path: Path, released: str
) -> None:
    bundle = tmp_path / "shop"
    init.init_bundle(init.Options(folder=bundle, pipeline=None))
    wheels = bundle / "layers" / "wheels"
    wheels.mkdir()
    for old in ("cairn-0.1.0-py3-none-any.whl", "cairn_lambda-7.0.0.dev1-py3-none-any.whl"):
        (wheels / old).write_bytes(b"")

    report = init.init_bundle(init.Options(folder=bundle, layer_only=True))

    assert sorted(report.removed) == [
        "layers/wheels/cairn-0.1.0-py3-none-any.whl",
        "layers/wheels/cairn_lambda-7.0.0.dev1-py3-none-any.whl",
    ]
    assert list(wheels.iterdir()) == []


@pytest.mark.parametrize(
    ("version", "from_folder", "unreleased"),
    [
        ("1.2.3", False, False),
        ("1.2.3", True, True),
        ("1.3.0.dev2", False, True),
        ("1.2.3+build.7", False, True),
    ],
)
def test_a_release_is_an_index_install_of_a_public_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, from_folder: bool, unreleased: bool
) -> None:
    installed_as(tmp_path / "site", version, from_folder=from_folder)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert wheel.unreleased() is unreleased
    assert wheel.pin() == f"cairn-lambda=={version}"


def test_no_file_of_the_repository_names_a_package_registry_s_host() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    named = []
    for relative in filter(None, listed.decode().split("\0")):
        path = ROOT / relative
        if path.is_symlink() or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        named += [f"{relative}: {match.group()}" for match in REGISTRY_HOSTS.finditer(text)]
    assert named == []


def test_no_document_tells_a_user_to_install_the_other_project_s_cairn() -> None:
    pages = [ROOT / "README.md", ROOT / "layers" / "cairn" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    told = [
        f"{page.relative_to(ROOT)}: {match.group()}" for page in pages for match in BARE_NAME.finditer(page.read_text())
    ]
    assert told == []
