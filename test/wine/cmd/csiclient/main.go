//go:build windows

// Command csiclient calls the CSI Proxy API through the unmodified CSI Proxy
// client library, as a CSI driver on a Windows node does. The Windows tests
// (test/wine) run it under Wine against pipeguard-agent.exe.
//
// It reads one call per line from standard input:
//
//	GROUP/VERSION METHOD REQUEST-JSON
//
// for example
//
//	filesystem/v1 Mkdir {"path":"C:\\var\\lib\\kubelet\\pods\\x"}
//
// and writes one JSON object per call to standard output: the call, the gRPC
// code and message, and the response in protobuf JSON. The line "pid"
// answers with the program's own process id, so that a test can tell a
// container runtime which process calls; the line "reconnect" closes the
// connections, so that the next calls open new ones.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/protoadapt"
)

// result is the answer to one call.
type result struct {
	Call     string          `json:"call"`
	Code     string          `json:"code"`
	Message  string          `json:"message,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
}

func main() {
	open := map[string]any{}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "reconnect" { // the next calls open new connections
			for gv, c := range open {
				if closer, ok := c.(interface{ Close() error }); ok {
					_ = closer.Close()
				}
				delete(open, gv)
			}
			continue
		}
		if line == "pid" {
			pid, _ := json.Marshal(map[string]int{"pid": os.Getpid()})
			_ = out.Encode(result{Call: "pid", Code: "OK", Response: pid})
			continue
		}
		if err := out.Encode(call(open, line)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, c := range open {
		if closer, ok := c.(interface{ Close() error }); ok {
			_ = closer.Close()
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// call makes the call on one input line.
func call(open map[string]any, line string) result {
	fields := strings.SplitN(line, " ", 3)
	if len(fields) < 2 {
		return result{Call: line, Code: "BadInput", Message: "want GROUP/VERSION METHOD [REQUEST-JSON]"}
	}
	gv, method := fields[0], fields[1]
	body := "{}"
	if len(fields) == 3 {
		body = fields[2]
	}
	r := result{Call: gv + " " + method}
	client, ok := open[gv]
	if !ok {
		newClient, known := clients[gv]
		if !known {
			r.Code, r.Message = "BadInput", "unknown API group version "+gv
			return r
		}
		c, err := newClient()
		if err != nil {
			r.Code, r.Message = "Dial", err.Error()
			return r
		}
		open[gv], client = c, c
	}
	m := reflect.ValueOf(client).MethodByName(method)
	if !m.IsValid() || m.Type().NumIn() < 2 {
		r.Code, r.Message = "BadInput", fmt.Sprintf("%s has no method %s", gv, method)
		return r
	}
	req := reflect.New(m.Type().In(1).Elem())
	// The older API versions are generated with the first protobuf API.
	if err := protojson.Unmarshal([]byte(body), protoadapt.MessageV2Of(req.Interface().(protoadapt.MessageV1))); err != nil {
		r.Code, r.Message = "BadInput", fmt.Sprintf("request of %s %s: %v", gv, method, err)
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := m.Call([]reflect.Value{reflect.ValueOf(ctx), req})
	if err, _ := res[1].Interface().(error); err != nil {
		s := status.Convert(err)
		r.Code, r.Message = s.Code().String(), s.Message()
		return r
	}
	r.Code = "OK"
	if msg, ok := res[0].Interface().(protoadapt.MessageV1); ok {
		r.Response, _ = protojson.Marshal(protoadapt.MessageV2Of(msg))
	}
	return r
}
