#!/usr/bin/env python3
"""An independent peer for opreg's signing tests, written from the formats' specifications
(cosign's key file and tag-based signature formats, the OCI distribution API), not from opreg's
code: Python's `cryptography` for ECDSA and PKCS#8, PyNaCl for secretbox, hashlib's scrypt.

Commands (registries are plain HTTP, anonymous):
  check-key KEY PASSPHRASE PUB         decrypt opreg's private key, check it matches PUB
  encrypt-key KIND OUT PASSPHRASE      write a cosign-format encrypted key (p256, ed25519, rsa)
                                       and OUT.pub beside it
  verify HOST REPO DIGEST PUB          verify the signatures at REPO's sha256-HEX.sig tag;
                                       prints one JSON line per signature checked
  sign HOST REPO DIGEST KEY PASSPHRASE IDENTITY [--tamper]
                                       sign DIGEST with the encrypted KEY as cosign would, the
                                       payload's docker-reference IDENTITY; --tamper uploads a
                                       payload other than the one signed
"""

import base64
import hashlib
import json
import os
import sys
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from nacl.secret import SecretBox

SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
ANNOTATION = "dev.cosignproject.cosign/signature"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def pem_body(text, want_types):
    lines = text.strip().splitlines()
    kind = lines[0][len("-----BEGIN "):-len("-----")]
    if kind not in want_types:
        raise SystemExit(f"unexpected PEM type {kind}")
    return kind, base64.b64decode("".join(lines[1:-1]))


def decrypt(path, passphrase):
    _, body = pem_body(open(path).read(),
                       ("ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY"))
    doc = json.loads(body)
    assert doc["kdf"]["name"] == "scrypt", doc
    assert doc["cipher"]["name"] == "nacl/secretbox", doc
    p = doc["kdf"]["params"]
    assert (p["N"], p["r"], p["p"]) in ((32768, 8, 1), (65536, 8, 1), (131072, 8, 1)), p
    key = hashlib.scrypt(passphrase.encode(), salt=base64.b64decode(doc["kdf"]["salt"]),
                         n=p["N"], r=p["r"], p=p["p"], dklen=32, maxmem=1 << 28)
    der = SecretBox(key).decrypt(base64.b64decode(doc["ciphertext"]),
                                 base64.b64decode(doc["cipher"]["nonce"]))
    return doc, serialization.load_der_private_key(der, None)


def encrypt(der, passphrase):
    salt, nonce = os.urandom(32), os.urandom(24)
    key = hashlib.scrypt(passphrase.encode(), salt=salt, n=65536, r=8, p=1, dklen=32,
                         maxmem=1 << 28)
    sealed = SecretBox(key).encrypt(der, nonce).ciphertext
    doc = {"kdf": {"name": "scrypt", "params": {"N": 65536, "r": 8, "p": 1},
                   "salt": base64.b64encode(salt).decode()},
           "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(nonce).decode()},
           "ciphertext": base64.b64encode(sealed).decode()}
    b64 = base64.b64encode(json.dumps(doc).encode()).decode()
    lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
    return "\n".join(["-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----", *lines,
                      "-----END ENCRYPTED SIGSTORE PRIVATE KEY-----", ""])


def check_key(path, passphrase, pub_path):
    doc, private = decrypt(path, passphrase)
    assert isinstance(private, ec.EllipticCurvePrivateKey), type(private)
    assert private.curve.name == "secp256r1", private.curve.name
    public = serialization.load_pem_public_key(open(pub_path, "rb").read())
    mine = private.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    theirs = public.public_bytes(serialization.Encoding.DER,
                                 serialization.PublicFormat.SubjectPublicKeyInfo)
    assert mine == theirs, "the private key does not match the public key"
    print(json.dumps({"ok": True, "N": doc["kdf"]["params"]["N"]}))


def encrypt_key(kind, out, passphrase):
    private = {"p256": lambda: ec.generate_private_key(ec.SECP256R1()),
               "ed25519": ed25519.Ed25519PrivateKey.generate,
               "rsa": lambda: rsa.generate_private_key(65537, 2048)}[kind]()
    der = private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    open(out, "w").write(encrypt(der, passphrase))
    open(out + ".pub", "wb").write(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req) as r:
        return r.read()


def verify(host, repo, digest, pub_path):
    public = serialization.load_pem_public_key(open(pub_path, "rb").read())
    tag = digest.replace(":", "-", 1) + ".sig"
    manifest = json.loads(get(f"http://{host}/v2/{repo}/manifests/{tag}", OCI_MANIFEST))
    assert manifest["mediaType"] == OCI_MANIFEST, manifest
    config = get(f"http://{host}/v2/{repo}/blobs/{manifest['config']['digest']}")
    assert "sha256:" + hashlib.sha256(config).hexdigest() == manifest["config"]["digest"]
    for layer in manifest["layers"]:
        assert layer["mediaType"] == SIMPLE_SIGNING, layer
        payload = get(f"http://{host}/v2/{repo}/blobs/{layer['digest']}")
        assert "sha256:" + hashlib.sha256(payload).hexdigest() == layer["digest"]
        claims = json.loads(payload)
        result = {"identity": claims["critical"]["identity"]["docker-reference"],
                  "digest": claims["critical"]["image"]["docker-manifest-digest"],
                  "type": claims["critical"]["type"], "optional": claims.get("optional", "absent")}
        try:
            public.verify(base64.b64decode(layer["annotations"][ANNOTATION]), payload,
                          ec.ECDSA(hashes.SHA256()))
            result["verified"] = True
        except Exception:
            result["verified"] = False
        result["matches"] = result["digest"] == digest and result["identity"] == f"{host}/{repo}"
        print(json.dumps(result))


def push_blob(host, repo, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    req = urllib.request.Request(f"http://{host}/v2/{repo}/blobs/uploads/", method="POST",
                                 data=b"")
    with urllib.request.urlopen(req) as r:
        location = r.headers["Location"]
    if location.startswith("/"):
        location = f"http://{host}{location}"
    sep = "&" if "?" in location else "?"
    req = urllib.request.Request(f"{location}{sep}digest={digest}", method="PUT", data=data,
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(req).read()
    return digest


def sign(host, repo, digest, key_path, passphrase, identity, tamper):
    _, private = decrypt(key_path, passphrase)
    payload = json.dumps({"critical": {"identity": {"docker-reference": identity},
                                       "image": {"docker-manifest-digest": digest},
                                       "type": "cosign container image signature"},
                          "optional": {"creator": "signing_peer.py"}}).encode()
    signature = private.sign(payload, ec.ECDSA(hashes.SHA256()))
    uploaded = payload.replace(b"signing_peer.py", b"signing_peer.pY") if tamper else payload
    layer_digest = push_blob(host, repo, uploaded)
    config = json.dumps({"architecture": "", "os": "", "config": {},
                         "rootfs": {"type": "layers", "diff_ids": [layer_digest]}}).encode()
    config_digest = push_blob(host, repo, config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "size": len(config), "digest": config_digest},
        "layers": [{"mediaType": SIMPLE_SIGNING, "size": len(uploaded), "digest": layer_digest,
                    "annotations": {ANNOTATION: base64.b64encode(signature).decode()}}],
    }).encode()
    tag = digest.replace(":", "-", 1) + ".sig"
    req = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{tag}", method="PUT",
                                 data=manifest, headers={"Content-Type": OCI_MANIFEST})
    urllib.request.urlopen(req).read()
    print(json.dumps({"tag": tag}))


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "check-key":
        check_key(*args)
    elif cmd == "encrypt-key":
        encrypt_key(*args)
    elif cmd == "verify":
        verify(*args)
    elif cmd == "sign":
        tamper = "--tamper" in args
        sign(*[a for a in args if a != "--tamper"], tamper)
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv)
