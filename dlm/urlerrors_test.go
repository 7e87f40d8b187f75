package dlm_test

import (
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
)

// TestURLErrorsNeverQuotePassword checks that Open and OpenNode refuse node
// URLs whose password url.Parse would split elsewhere than at the user
// information, or refuse, with errors that show no part of the password.
func TestURLErrorsNeverQuotePassword(t *testing.T) {
	for _, name := range []string{"", "somedriver"} {
		dlmtest.TestURLErrors(t, name, func(rawURL string) error {
			n, err := dlm.OpenNode(rawURL)
			if err == nil {
				n.Close()
			}
			return err
		})
		dlmtest.TestURLErrors(t, name, func(rawURL string) error {
			// The URL is the second: its index is in the error.
			m, err := dlm.Open([]string{"redis+somedriver://h:1", rawURL})
			if err == nil {
				m.Close()
			}
			return err
		})
	}
}
