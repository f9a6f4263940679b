#!/bin/sh
# Issues a private CA, the broker's certificate and one client certificate per
# principal with plain openssl (docs/security.md). Run it in an empty,
# private directory:
#
#   deploy/security/issue-certs.sh broker.example.org root lead-ml sched-ml agent-a trainer
#
# BROKER_NAME goes into the broker certificate's SAN (a DNS name or an IP);
# each further argument becomes a client certificate whose CN is the
# principal's name in the roles file. Keep ca.key offline once done.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 BROKER_NAME [PRINCIPAL...]" >&2; exit 2; }
broker=$1; shift
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; chmod 600 "$1.key"; }
if [ ! -f ca.crt ]; then
  key ca
  openssl req -x509 -new -key ca.key -subj /CN=tidegate-ca -days 3650 -out ca.crt
fi
case $broker in
  *[!0-9.]*) san="DNS:$broker" ;;
  *) san="IP:$broker" ;;
esac
printf 'subjectAltName=%s\n' "$san" > broker.ext
key broker
openssl req -new -key broker.key -subj "/CN=$broker" -out broker.csr
openssl x509 -req -in broker.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 -extfile broker.ext -out broker.crt
for principal in "$@"; do
  key "$principal"
  openssl req -new -key "$principal.key" -subj "/CN=$principal" -out "$principal.csr"
  openssl x509 -req -in "$principal.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -out "$principal.crt"
done
rm -f ./*.csr broker.ext
echo "broker: --tls-cert broker.crt --tls-key broker.key --client-ca ca.crt"
echo "clients: --ca ca.crt --cert PRINCIPAL.crt --key PRINCIPAL.key"
