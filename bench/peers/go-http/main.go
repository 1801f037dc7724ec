// The Go 1.19 servers examples/httpd.c is measured against: the same
// plaintext answer, keep-alive and pipelining, a read deadline per request
// (the idle timeout) and a write deadline.
//
//	go-http -server raw|nethttp [-port N] [-idle-ms MS]
//
// raw: a goroutine per connection on net.Conn with SetReadDeadline before
// each request's head, as a user of net writes one (and as the C server
// is written). nethttp: net/http with ReadHeaderTimeout, IdleTimeout and
// WriteTimeout set to the same values. GOMAXPROCS comes from the
// environment. Prints "listening on 127.0.0.1:PORT" once it accepts.
// Standard library only.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

var (
	server = flag.String("server", "raw", "raw or nethttp")
	port   = flag.Int("port", 0, "port on 127.0.0.1 (0: any)")
	idleMs = flag.Int64("idle-ms", 10000, "the read deadline for each request's head")
)

const writeTimeout = 10 * time.Second

var reply = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n")

// A connection: heads read through a buffer, answered in order; a head
// that asks to close ends it after its answer. Request bodies are not
// taken (wrk sends none).
func serveRaw(c net.Conn, idle time.Duration) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 8192)
	w := bufio.NewWriterSize(c, 8192)
	for {
		c.SetReadDeadline(time.Now().Add(idle))
		closeAfter := false
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break // the blank line ends the head
			}
			if len(line) > 17 && bytes.EqualFold(line[:17], []byte("Connection: close")) {
				closeAfter = true
			}
		}
		w.Write(reply)
		// answer a pipelined batch in one write: flush only when the
		// client has sent nothing more
		if r.Buffered() == 0 || closeAfter {
			c.SetWriteDeadline(time.Now().Add(writeTimeout))
			if w.Flush() != nil || closeAfter {
				return
			}
		}
	}
}

func main() {
	flag.Parse()
	idle := time.Duration(*idleMs) * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-http:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	switch *server {
	case "raw":
		for {
			c, err := ln.Accept()
			if err != nil {
				continue
			}
			go serveRaw(c, idle)
		}
	case "nethttp":
		body := []byte("ok\n")
		s := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Length", "3")
				w.Write(body)
			}),
			ReadHeaderTimeout: idle,
			IdleTimeout:       idle,
			WriteTimeout:      writeTimeout,
		}
		fmt.Fprintln(os.Stderr, s.Serve(ln))
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "go-http: -server raw|nethttp")
		os.Exit(2)
	}
}
