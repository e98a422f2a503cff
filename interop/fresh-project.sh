#!/usr/bin/env bash
# A new user's project on our crates as packaged (`cargo package`), not as they sit in the
# workspace: usage `interop/fresh-project.sh PACKAGE_DIR` (the directory of the `.crate` files;
# .ci/run passes its packaging output and target directory).
#
#   1. a local registry: a directory source holding every third-party crate at the version the
#      workspace locks (`cargo vendor`) and each of our `.crate` files unpacked, its checksum
#      the `.crate` file's sha256; the project's `.cargo/config.toml` puts it in place of
#      crates.io, so every crate comes from it and nothing from the network;
#   2. the project: `[dependencies]` from README.md's toml block (a `git = ` dependency on this
#      repository becomes `=VERSION`, the packaged version; every other line as written) and
#      each of README.md's `rust` blocks with a `fn main` as a binary, verbatim;
#   3. it builds offline, its lockfile pins our crates by the checksums of the `.crate` files,
#      and the README's client completes a turn against the README's agent.
#
# The project lives in $CARGO_TARGET_DIR/fresh-project and builds into $CARGO_TARGET_DIR, so
# the third-party crates that `cargo package` built when it verified our crates are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=$(realpath "${1:?usage: interop/fresh-project.sh PACKAGE_DIR}")
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
dir="$target/fresh-project"
version=$(cargo pkgid -p acp-rs-runtime | sed 's/.*[#@]//')
crates=("$pkg"/acp-rs-*-"$version".crate)
[[ -e ${crates[0]} ]] || { echo "no acp-rs-*-$version.crate in $pkg"; exit 1; }

rm -rf "$dir"
mkdir -p "$dir/src/bin" "$dir/.cargo"

# 1. The registry.
cargo vendor -q --versioned-dirs "$dir/registry" >/dev/null
for crate in "${crates[@]}"; do
  name=$(basename "$crate" .crate)
  tar -xzf "$crate" -C "$dir/registry"
  printf '{"files":{},"package":"%s"}\n' "$(sha256sum "$crate" | cut -d' ' -f1)" \
    >"$dir/registry/$name/.cargo-checksum.json"
done
cat >"$dir/.cargo/config.toml" <<EOF
[source.crates-io]
replace-with = "packaged"

[source.packaged]
directory = "$dir/registry"
EOF

# 2. The project, from README.md.
# The lines of the first ```toml block from `[dependencies]` on.
dependencies=$(awk '/^```toml$/ { inside = 1; next } inside && /^```$/ { exit } inside' README.md |
  sed -n '/^\[dependencies\]$/,$p' |
  sed -E "s/^(acp-rs-[a-z-]+) = \{ git = \"[^\"]*\"[^}]*\}.*/\1 = \"=$version\"/")
grep -q '^acp-rs-' <<<"$dependencies" || { echo "README.md's toml block names none of our crates"; exit 1; }
{
  cat <<'EOF'
[package]
name = "fresh-project"
version = "0.0.0"
edition = "2024"
publish = false

# Not a member of the repository's workspace, which it sits under.
[workspace]

EOF
  echo "$dependencies"
} >"$dir/Cargo.toml"
# Each ```rust block of README.md with a `fn main`, as src/bin/readme-N.rs.
awk -v out="$dir/src/bin" '
  /^```rust$/ { n++; text = ""; inside = 1; next }
  inside && /^```$/ { inside = 0; if (text ~ /fn main/) printf "%s", text > (out "/readme-" n ".rs"); next }
  inside { text = text $0 "\n" }
' README.md
bins=("$dir"/src/bin/readme-*.rs)
[[ -e ${bins[0]} ]] || { echo "README.md has no rust block with a main"; exit 1; }
echo "fresh project: ${#bins[@]} programs of README.md on ${#crates[@]} packaged crates, in $dir"
sed -n '/^\[dependencies\]$/,$p' "$dir/Cargo.toml"

# 3. Build, check the pins, run.
(cd "$dir" && CARGO_TARGET_DIR="$target" cargo build --offline -q)
pinned=0
for crate in "${crates[@]}"; do
  name=$(basename "$crate" "-$version.crate")
  entry=$(grep -x -A3 "name = \"$name\"" "$dir/Cargo.lock" || true)
  [[ -n $entry ]] || continue
  ours=$(sha256sum "$crate" | cut -d' ' -f1)
  [[ $entry == *"checksum = \"$ours\""* ]] \
    || { echo "the project's lockfile pins another $name than ours ($ours):"; echo "$entry"; exit 1; }
  pinned=$((pinned + 1))
done
(( pinned >= 1 )) || { echo "none of our crates in the project's lockfile"; exit 1; }
agent=$(grep -l 'impl Agent for' "${bins[@]}" | head -1)
client=$(grep -l 'AgentCommand' "${bins[@]}" | head -1)
if [[ -n $agent && -n $client ]]; then
  out=$(timeout 60 "$target/debug/$(basename "$client" .rs)" "$target/debug/$(basename "$agent" .rs)" </dev/null)
  [[ $out == *"Hello, agent"* && $out == *"[EndTurn]"* ]] \
    || { echo "the README's client against the README's agent printed:"; echo "$out"; exit 1; }
fi
# The registry is ~200 MB of sources, needed by nothing after this; kept when a step failed.
rm -rf "$dir/registry"
echo "fresh project: built from $pinned packaged crates (pinned by checksum); the README's client completed a turn against the README's agent"
