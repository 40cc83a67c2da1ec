"""The size of each function and layer ``sam build`` made: ``python -m bench.sizes .aws-sam/build``.

It reads the built template (``<build dir>/template.yaml``, nested applications' too), so it reports
exactly what ``sam deploy`` would upload: each function's folder and each layer's, unzipped and zipped
(deflate, as ``sam package`` zips them). It exits 1 when a function's unzipped package is over
``--max-function-bytes`` (:data:`FUNCTION_LIMIT` unless given), which fails ``make test``: the goal of
issue #18 is under 1 MB, its own code only, with Powertools in a layer and boto3 from the Lambda runtime.
"""

from __future__ import annotations

import argparse
import io
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from idemflow.template import load_template

MIB = 1024 * 1024
FUNCTION_LIMIT = MIB
"""The most a built function may hold, unzipped: its own code only (issue #18)."""


@dataclass(frozen=True)
class Package:
    where: str
    """``<nested path>.<LogicalId>``, as in the built template."""
    kind: str
    """``function`` or ``layer``."""
    folder: Path
    files: int
    unzipped: int
    zipped: int


def measure(folder: Path) -> tuple[int, int, int]:
    """(files, unzipped bytes, zipped bytes) of a folder, zipped in memory as ``sam package`` would."""
    buffer = io.BytesIO()
    files = unzipped = 0
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            files += 1
            unzipped += path.stat().st_size
            archive.write(path, path.relative_to(folder).as_posix())
    return files, unzipped, buffer.tell()


def packages(build_dir: Path, prefix: str = "") -> Iterator[Package]:
    """Every function and layer of the built template in ``build_dir``, nested applications' included."""
    template = load_template(build_dir / "template.yaml")
    for logical_id, resource in sorted(template["Resources"].items()):
        kind = resource.get("Type")
        props = resource.get("Properties") or {}
        where = f"{prefix}{logical_id}"
        if kind == "AWS::Serverless::Application" and isinstance(props.get("Location"), str):
            nested = (build_dir / props["Location"]).parent
            yield from packages(nested, f"{where}.")
            continue
        uri = {"AWS::Serverless::Function": "CodeUri", "AWS::Serverless::LayerVersion": "ContentUri"}.get(str(kind))
        if uri is None or not isinstance(props.get(uri), str):
            continue
        folder = build_dir / props[uri]
        files, unzipped, zipped = measure(folder)
        yield Package(where, "function" if uri == "CodeUri" else "layer", folder, files, unzipped, zipped)


def table(found: list[Package]) -> list[str]:
    lines = ["| package | kind | files | unzipped | zipped |", "|---|---|---:|---:|---:|"]
    lines += [
        f"| {p.where} | {p.kind} | {p.files} | {p.unzipped / 1024:,.1f} KiB | {p.zipped / 1024:,.1f} KiB |"
        for p in found
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sizes", description=__doc__)
    parser.add_argument("build_dirs", nargs="+", type=Path, help="sam build's --build-dir (with its template.yaml)")
    parser.add_argument(
        "--max-function-bytes",
        type=int,
        default=FUNCTION_LIMIT,
        help="fail when a function's unzipped package is larger (default: 1 MiB)",
    )
    args = parser.parse_args(argv)
    found = [p for d in args.build_dirs for p in packages(d)]
    if not any(p.kind == "function" for p in found):
        print(f"bench.sizes: no function in {', '.join(map(str, args.build_dirs))}: run sam build first")
        return 1
    print("\n".join(table(found)))
    limit = args.max_function_bytes
    too_big = [p for p in found if p.kind == "function" and p.unzipped > limit]
    for p in too_big:
        print(
            f"bench.sizes: {p.where} is {p.unzipped:,} bytes unzipped, over {limit:,}: "
            f"bundle nothing the Lambda runtime (boto3) or a layer (Powertools) provides ({p.folder})"
        )
    return 1 if too_big else 0


if __name__ == "__main__":
    sys.exit(main())
