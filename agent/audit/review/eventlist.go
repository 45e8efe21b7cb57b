package review

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/internal/option"
)

// eventListStart recognises a stream of audit.k8s.io/v1 EventLists (what
// a webhook receiver saves) rather than JSON lines of Events.
var eventListStart = regexp.MustCompile(`^\s*\{[^{]*"kind"\s*:\s*"EventList"`)

// scanAny reads JSON lines of records, or EventLists whose items are the
// records, byte for byte as the agent wrote them. An item's position is
// its number in the stream, counted from 1.
func scanAny(r io.Reader, name string, fn func(audit.Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4096)
	if !eventListStart.Match(head) {
		return scan(br, name, fn)
	}
	cr := &listCap{r: br}
	dec := json.NewDecoder(cr)
	cr.dec = dec
	n := 0
	for list := 1; ; list++ {
		var l struct {
			Kind       string            `json:"kind"`
			APIVersion string            `json:"apiVersion"`
			Items      []json.RawMessage `json:"items"`
		}
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// A cut or garbled list: report it as a bad record where it is.
			rec := audit.Record{File: name, Line: n + 1, Err: fmt.Errorf("EventList %d is not valid JSON (%w)", list, err)}
			if ferr := fn(rec); ferr != nil && ferr != errStop {
				return ferr
			}
			return nil
		}
		if l.Kind != "EventList" || l.APIVersion != audit.APIVersion {
			rec := audit.Record{File: name, Line: n + 1, Err: fmt.Errorf("object %d is not an %s EventList (kind %q, apiVersion %q)", list, audit.APIVersion, l.Kind, l.APIVersion)}
			if ferr := fn(rec); ferr != nil {
				if ferr == errStop {
					return nil
				}
				return ferr
			}
			continue
		}
		for _, item := range l.Items {
			n++
			rec := audit.ParseRecord(name, n, bytes.Clone(item))
			if ferr := fn(rec); ferr != nil {
				if ferr == errStop {
					return nil
				}
				return ferr
			}
		}
	}
}

// MaxEventListBytes bounds one EventList that review holds in memory; the
// agent's batches are at most --audit-webhook-batch-max-bytes (3 MiB by
// default), and a longer list is reported as not valid, where it starts.
const MaxEventListBytes = 256 << 20

// listCap fails the read that would make the decoder hold more than
// MaxEventListBytes of the list it is decoding.
type listCap struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
}

func (c *listCap) Read(p []byte) (int, error) {
	if c.read-c.dec.InputOffset() > MaxEventListBytes {
		return 0, option.Errorf("an EventList longer than %d bytes (MaxEventListBytes), more than review holds of one list; the agent sends lists of at most %s", MaxEventListBytes,
			option.Name{Key: audit.OptionWebhookBatchMaxBytes, Field: "WebhookOptions.BatchMaxBytes"})
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}
