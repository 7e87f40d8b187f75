package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certs are the PEM files of a test certificate authority and of a server
// certificate it signed, and the pool a client trusts them with.
type certs struct {
	caFile, certFile, keyFile string
	pool                      *x509.CertPool
}

// makeCerts writes a fresh CA and a server certificate for 127.0.0.1 and
// localhost into dir. Both are valid from an hour ago for a day.
func makeCerts(dir string) (*certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dlmtest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "dlmtest redis-server"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &certs{
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "server.crt"),
		keyFile:  filepath.Join(dir, "server.key"),
		pool:     x509.NewCertPool(),
	}
	c.pool.AddCert(ca)
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{
		{c.caFile, "CERTIFICATE", caDER},
		{c.certFile, "CERTIFICATE", der},
		{c.keyFile, "PRIVATE KEY", keyDER},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// clientConfig returns a client configuration that trusts the CA.
func (c *certs) clientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// serverArgs returns the redis-server arguments that serve TLS only, on
// port.
func (c *certs) serverArgs(port int) []string {
	return []string{
		"--port", "0", "--tls-port", fmt.Sprint(port),
		"--tls-cert-file", c.certFile, "--tls-key-file", c.keyFile,
		"--tls-ca-cert-file", c.caFile, "--tls-auth-clients", "no",
	}
}
