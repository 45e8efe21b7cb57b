package system

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// TestRawSMBIOSDataFromFirmware calls GetSystemFirmwareTable('RSMB', 0)
// and reads the serial number from what it returns. Under Wine, which
// builds the table from the Linux host's DMI data, the serial number is
// compared with /sys/class/dmi/id/product_serial when that is readable.
func TestRawSMBIOSDataFromFirmware(t *testing.T) {
	raw, err := win32.NewFirmware().RawSMBIOSData()
	if err != nil {
		t.Fatal(err)
	}
	serial, err := SystemSerialNumber(raw)
	if err != nil {
		t.Fatalf("%v\nRawSMBIOSData: %x", err, raw)
	}
	t.Logf("SMBIOS %d.%d, %d bytes, System Information Serial Number %q", raw[1], raw[2], len(raw), serial)

	got, err := Native{}.BIOSSerialNumber(context.Background())
	if err != nil || got != serial {
		t.Fatalf("Native.BIOSSerialNumber = %q, %v; want %q", got, err, serial)
	}

	t.Run("matches product_serial", func(t *testing.T) {
		if os.Getenv("PIPEGUARD_UNDER_WINE") != "1" {
			t.Skip("compares with the Linux host's DMI data: runs under Wine only")
		}
		// Wine maps the Linux root to Z:.
		host, err := os.ReadFile(`Z:\sys\class\dmi\id\product_serial`)
		if err != nil {
			t.Skipf("the Linux host's /sys/class/dmi/id/product_serial is not readable (%v): it usually needs root, and containers may have no DMI data", err)
		}
		if want := strings.TrimSpace(string(host)); serial != want {
			t.Fatalf("serial number %q, the host's product_serial %q", serial, want)
		}
	})
}
