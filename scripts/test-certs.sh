#!/usr/bin/env bash
# Test certificates for the TLS tests (tests/it/tls.rs) and the TLS interop
# run (scripts/conformance.sh), made with the openssl command line into DIR:
#   ca.pem ca.key                 a test CA
#   server.pem server.key         127.0.0.1 / localhost, signed by the CA
#   server2.pem server2.key       the same names, another serial (a reload)
#   client.pem client.key         CN=alice, URI SAN spiffe://wymcp.test/alice
#   client-cn.pem client-cn.key   CN=bob, no SAN
#   other-ca.pem                  another CA
#   other-client.pem/.key         CN=mallory, URI SAN spiffe://wymcp.test/alice, by the other CA
# Throwaway keys for loopback tests; never for anything else.
set -euo pipefail
dir=${1:?usage: test-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
q() { "$@" >/dev/null 2>&1; }
ca() { # name cn
  q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$1.key" -out "$1.pem" -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() { # name ca cn ext serial
  q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.csr" -subj "/CN=$3"
  printf '%s\n' "basicConstraints=CA:FALSE" "$4" > "$1.ext"
  q openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -set_serial "$5" \
    -days 2 -out "$1.pem" -extfile "$1.ext"
  rm -f "$1.csr" "$1.ext"
}
ca ca "wymcp test CA"
ca other-ca "another CA"
server_ext="subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
leaf server ca localhost "$server_ext" 4097
leaf server2 ca localhost "$server_ext" 8193
leaf client ca alice "subjectAltName=URI:spiffe://wymcp.test/alice
extendedKeyUsage=clientAuth" 12289
leaf client-cn ca bob "extendedKeyUsage=clientAuth" 16385
leaf other-client other-ca mallory "subjectAltName=URI:spiffe://wymcp.test/alice
extendedKeyUsage=clientAuth" 20481
