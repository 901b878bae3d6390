#!/usr/bin/env bash
# Prints one digest of everything the browser bundle is built from (src/, www/, assets/,
# Cargo.toml, Cargo.lock, Trunk.toml, build.rs, scripts/post-build.sh, docs/SCHEMA.md which the bundle serves). scripts/test-web.sh writes it into
# dist/.sources-digest after building; the end-to-end tests refuse a dist/ whose digest is not
# that of the sources on disk, so they never test an old bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
{ find src www assets -type f; printf '%s\n' Cargo.toml Cargo.lock Trunk.toml build.rs docs/SCHEMA.md scripts/post-build.sh; } | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1
