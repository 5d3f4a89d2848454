"""Build the krew archive and write its manifest: `python packaging/krew/build.py [--out DIR]`.

The archive holds the shim `kubectl-kueuediag` (it runs the installed kueuediag package). It is built
reproducibly (fixed mtimes, owner and gzip header), so the sha256 in the committed manifest
(packaging/krew/kueuediag.yaml) can be checked by rebuilding; tests/test_kubectl_plugin.py does.
Local install without a release: `kubectl krew install --manifest=packaging/krew/kueuediag.yaml
--archive=dist/kubectl-kueuediag.tar.gz`.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import tarfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RELEASES = "https://github.com/kueuediag/kueuediag/releases/download"
ARCHIVE = "kubectl-kueuediag.tar.gz"


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def archive_bytes() -> bytes:
    shim = (HERE / "kubectl-kueuediag").read_bytes()
    tar_buf = io.BytesIO()
    with tarfile.open(fileobj=tar_buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        info = tarfile.TarInfo("kubectl-kueuediag")
        info.size, info.mode, info.mtime, info.uid, info.gid = len(shim), 0o755, 0, 0, 0
        tf.addfile(info, io.BytesIO(shim))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        gz.write(tar_buf.getvalue())
    return out.getvalue()


def manifest(sha256: str, ver: str) -> str:
    return f"""apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: kueuediag
spec:
  version: v{ver}
  shortDescription: Explain why a Kueue workload is pending
  description: |
    Answers "why is my Kueue workload pending?" with a ranked, evidence-backed verdict and the first fix:
    kubectl kueuediag why job/NAME -n NAMESPACE. Reads the cluster (GET/LIST only) or a recorded snapshot.
  caveats: |
    The plugin runs the kueuediag Python package (Python 3.11+): pipx install kueuediag
    Shell completion: see `kubectl kueuediag completion --help`.
  platforms:
  - selector:
      matchExpressions:
      - key: os
        operator: In
        values: [linux, darwin]
    uri: {RELEASES}/v{ver}/{ARCHIVE}
    sha256: {sha256}
    bin: kubectl-kueuediag
    files:
    - from: kubectl-kueuediag
      to: .
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where to write the archive")
    args = parser.parse_args()
    data = archive_bytes()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / ARCHIVE).write_bytes(data)
    (HERE / "kueuediag.yaml").write_text(manifest(hashlib.sha256(data).hexdigest(), version()))
    print(args.out / ARCHIVE)


if __name__ == "__main__":
    main()
