// The workloads ptbench runs inside its scheduler (bench/workloads/sched_workloads.c,
// bench/workloads/sched_memory.c), as goroutines with GOMAXPROCS = -threads: the
// same programs, line for line, so that a row of ours and Go's differ in
// the runtime only. Each counts what must add up as ours do: every
// goroutine it started finished, every wait ended once, no sleep woke
// before its deadline.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func isSched(w string) bool {
	switch w {
	case "spawn", "pingpong", "chan-timeout", "sleep", "sleep-1", "busy-lateness", "memory-g", "spawn-burst", "rpc-sched", "conn-churn":
		return true
	}
	return false
}

type schedResult struct {
	ops, gsStarted, gsFinished, waits, wakes, early int64
	bytes, createNs, releaseNs                      float64
	start                                           time.Time
	end                                             time.Time // a timed workload stops here
	elapsed                                         time.Duration
	cpu0, cpu, sys0, sys                            float64
	late                                            []int64
}

func (r *schedResult) begin() {
	r.cpu0 = cpuSeconds()
	r.sys0 = sysSeconds()
	r.start = time.Now()
	r.end = r.start.Add(time.Duration(*durationMs) * time.Millisecond)
}

func (r *schedResult) finish() {
	r.elapsed = time.Since(r.start)
	r.cpu = cpuSeconds() - r.cpu0
	r.sys = sysSeconds() - r.sys0
}

// With -ops, ops x threads in all (-ops is per thread; threads are Ps).
func opsWanted() int64 {
	if *opsLimit > 0 {
		return *opsLimit * int64(*threads)
	}
	return 0
}

// countFinished: the goroutines started since NumGoroutine read base have
// returned, once they have or a second has passed.
func (r *schedResult) countFinished(base int) {
	giveUp := time.Now().Add(time.Second)
	n := runtime.NumGoroutine()
	for n > base && time.Now().Before(giveUp) {
		runtime.Gosched()
		n = runtime.NumGoroutine()
	}
	left := int64(0)
	if n > base {
		left = int64(n - base)
	}
	r.gsFinished = r.gsStarted - left
}

const spawnBatch = 1000

func spawnChild(wg *sync.WaitGroup) { wg.Done() }

func schedSpawn(r *schedResult) {
	want, base := opsWanted(), runtime.NumGoroutine()
	var wg sync.WaitGroup
	r.begin()
	for (want > 0 && r.gsStarted < want) || (want == 0 && time.Now().Before(r.end)) {
		n := int64(spawnBatch)
		if want > 0 && want-r.gsStarted < n {
			n = want - r.gsStarted
		}
		wg.Add(int(n))
		for i := int64(0); i < n; i++ {
			go spawnChild(&wg)
		}
		r.gsStarted += n
		r.waits++
		wg.Wait()
		r.wakes++
	}
	r.finish()
	r.ops = r.gsStarted
	r.countFinished(base)
}

func schedPingpong(r *schedResult) {
	ping, pong := make(chan int), make(chan int)
	var received int64
	var done sync.WaitGroup
	want, base := opsWanted(), runtime.NumGoroutine()
	done.Add(1)
	go func() {
		for v := range ping {
			received++
			pong <- v
		}
		done.Done()
	}()
	r.gsStarted = 1
	r.begin()
	for v := 0; ; v++ {
		if want > 0 && int64(v) >= want || want == 0 && v&255 == 0 && !time.Now().Before(r.end) {
			break
		}
		r.waits++
		ping <- v
		back := <-pong
		r.ops++
		if back == v {
			r.wakes++
		}
	}
	r.finish()
	close(ping)
	done.Wait()
	if received != r.waits {
		r.wakes = received
	}
	r.countFinished(base)
}

// Go's call-with-timeout idiom: a Timer of 100 ms, a select between an
// always-ready channel and the timer's, then Stop.
func schedChanTimeout(r *schedResult) {
	ready := make(chan int, 1)
	want, base := opsWanted(), runtime.NumGoroutine()
	r.begin()
	for i := int64(0); ; i++ {
		if want > 0 && i >= want || want == 0 && i&255 == 0 && !time.Now().Before(r.end) {
			break
		}
		t := time.NewTimer(100 * time.Millisecond)
		ready <- 1
		r.waits++
		select {
		case v := <-ready:
			if v == 1 {
				r.wakes++
			}
		case <-t.C:
		}
		t.Stop()
		r.ops++
	}
	r.finish()
	r.countFinished(base)
}

type sleeper struct {
	sleeps, woke, early int64
	late                []int64 // this goroutine's alone: merged after the run
}

func (z *sleeper) loop(d time.Duration, quota int64, end time.Time, asleep *int32) {
	for {
		t := time.Now()
		if quota > 0 && z.sleeps >= quota || quota == 0 && !t.Before(end) {
			return
		}
		deadline := t.Add(d)
		z.sleeps++
		if z.sleeps == 1 && asleep != nil {
			atomic.AddInt32(asleep, 1)
		}
		time.Sleep(d)
		now := time.Now()
		z.woke++
		if now.Before(deadline) {
			z.early++
		}
		z.late = append(z.late, int64(now.Sub(deadline)))
	}
}

func merge(r *schedResult, zs []sleeper) {
	for i := range zs {
		r.waits += zs[i].sleeps
		r.wakes += zs[i].woke
		r.early += zs[i].early
		r.late = append(r.late, zs[i].late...)
	}
	r.ops = r.wakes
}

func runSleepers(r *schedResult, n int, d time.Duration, quota int64) {
	zs := make([]sleeper, n)
	var wg sync.WaitGroup
	base := runtime.NumGoroutine()
	r.begin()
	wg.Add(n)
	for i := range zs {
		go func(z *sleeper) {
			z.loop(d, quota, r.end, nil)
			wg.Done()
		}(&zs[i])
	}
	r.gsStarted = int64(n)
	wg.Wait()
	r.finish()
	r.countFinished(base)
	merge(r, zs)
}

// busy-lateness: a hog per P spins for the whole phase, never calling the
// runtime; Go's sysmon preempts it after 10 ms, and the sleepers run.
func schedBusyLateness(r *schedResult) {
	const n = 100
	zs := make([]sleeper, n)
	var wg sync.WaitGroup
	var asleep int32
	base := runtime.NumGoroutine()
	r.begin()
	wg.Add(n + *threads)
	for i := range zs {
		go func(z *sleeper) {
			z.loop(time.Millisecond, 0, r.end, &asleep)
			wg.Done()
		}(&zs[i])
	}
	for atomic.LoadInt32(&asleep) < n {
		runtime.Gosched()
	}
	for i := 0; i < *threads; i++ {
		go func() {
			for time.Now().Before(r.end) {
			}
			wg.Done()
		}()
	}
	r.gsStarted = int64(n + *threads)
	wg.Wait()
	r.finish()
	r.countFinished(base)
	merge(r, zs)
}

// memory-g: half the goroutines wait on a WaitGroup, half in a receive.
func schedMemoryG(r *schedResult) {
	n := *memoryGs
	var gate, finished sync.WaitGroup
	gateC := make(chan int)
	var parked, released int64
	base := runtime.NumGoroutine()
	gate.Add(1)
	finished.Add(int(n))
	runtime.GC()
	r.begin()
	before := rss()
	t0 := time.Now()
	for i := int64(0); i < n; i++ {
		if i&1 == 1 {
			go func() {
				atomic.AddInt64(&parked, 1)
				<-gateC
				atomic.AddInt64(&released, 1)
				finished.Done()
			}()
		} else {
			go func() {
				atomic.AddInt64(&parked, 1)
				gate.Wait()
				atomic.AddInt64(&released, 1)
				finished.Done()
			}()
		}
	}
	r.gsStarted = n
	for atomic.LoadInt64(&parked) < n {
		runtime.Gosched()
	}
	runtime.Gosched()
	t1 := time.Now()
	after := rss()
	gate.Done()
	close(gateC)
	finished.Wait()
	t2 := time.Now()
	r.finish()
	r.bytes = float64(after-before) / float64(n)
	r.createNs = float64(t1.Sub(t0).Nanoseconds()) / float64(n)
	r.releaseNs = float64(t2.Sub(t1).Nanoseconds()) / float64(n)
	r.ops = n
	r.waits, r.wakes = parked, released
	r.countFinished(base)
}

// spawn-burst: n goroutines started by one, each waiting on a gate that
// opens once all are started, so that none finishes (and frees its stack
// for the next) before the last is made; the time per goroutine from the
// first go statement until the last has finished.
func schedSpawnBurst(r *schedResult) {
	n := *memoryGs
	var gate, finished sync.WaitGroup
	var passed int64
	base := runtime.NumGoroutine()
	gate.Add(1)
	finished.Add(int(n))
	r.begin()
	t0 := r.start
	for i := int64(0); i < n; i++ {
		go func() {
			gate.Wait()
			atomic.AddInt64(&passed, 1)
			finished.Done()
		}()
	}
	r.gsStarted = n
	t1 := time.Now()
	gate.Done()
	finished.Wait()
	r.finish()
	t2 := t0.Add(r.elapsed)
	r.createNs = float64(t1.Sub(t0).Nanoseconds()) / float64(n)
	r.releaseNs = float64(t2.Sub(t1).Nanoseconds()) / float64(n)
	r.ops = n
	r.waits, r.wakes = n, passed
	r.countFinished(base)
}

// rpc-sched: 64 client goroutines doing request and response with a
// server goroutine each over a socketpair, SetDeadline before each request
// (Go's idiom: one call sets both the write's and the read's); late holds
// each request's round trip.
type rpcPair struct {
	c, s                   net.Conn
	sent, answered, served int64
	err                    error
	rtt                    []int64
}

func socketConn(fd int) net.Conn {
	f := os.NewFile(uintptr(fd), "socketpair")
	c, err := net.FileConn(f) // a dup, non-blocking, on the netpoller
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptbench-go: rpc-sched: %v\n", err)
		os.Exit(1)
	}
	return c
}

func (p *rpcPair) server(wg *sync.WaitGroup) {
	buf := make([]byte, 64)
	for {
		if _, err := io.ReadFull(p.s, buf); err != nil {
			break
		}
		p.served++
		if _, err := p.s.Write(buf); err != nil {
			break
		}
	}
	p.s.Close()
	wg.Done()
}

func (p *rpcPair) client(quota int64, end time.Time, wg *sync.WaitGroup) {
	req, rep := bytes.Repeat([]byte{'q'}, 64), make([]byte, 64)
	for {
		t := time.Now()
		if quota > 0 && p.sent >= quota || quota == 0 && !t.Before(end) {
			break
		}
		binary.LittleEndian.PutUint64(req, uint64(p.sent))
		p.c.SetDeadline(t.Add(time.Second))
		p.sent++
		_, err := p.c.Write(req)
		if err == nil {
			_, err = io.ReadFull(p.c, rep)
		}
		if err == nil && !bytes.Equal(req, rep) {
			err = errors.New("a response that is not its request")
		}
		if err != nil {
			p.err = err
			break
		}
		p.answered++
		p.rtt = append(p.rtt, int64(time.Since(t)))
	}
	p.c.Close()
	wg.Done()
}

func schedRPC(r *schedResult) {
	const pairs = 64
	ps := make([]rpcPair, pairs)
	for i := range ps {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ptbench-go: rpc-sched: socketpair: %v\n", err)
			os.Exit(1)
		}
		ps[i].c, ps[i].s = socketConn(fds[0]), socketConn(fds[1])
	}
	want := opsWanted()
	quota := (want + pairs - 1) / pairs
	var wg sync.WaitGroup
	base := runtime.NumGoroutine()
	r.begin()
	wg.Add(2 * pairs)
	for i := range ps {
		go ps[i].server(&wg)
	}
	for i := range ps {
		go ps[i].client(quota, r.end, &wg)
	}
	r.gsStarted = 2 * pairs
	wg.Wait()
	r.finish()
	r.countFinished(base)
	served := int64(0)
	var err error
	for i := range ps {
		r.waits += ps[i].sent
		r.wakes += ps[i].answered
		served += ps[i].served
		r.late = append(r.late, ps[i].rtt...)
		if err == nil {
			err = ps[i].err
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptbench-go: rpc-sched: a request failed: %v\n", err)
	}
	if served != r.waits {
		r.wakes = served
	}
	r.ops = r.wakes
}

// conn-churn: 64 client goroutines each dial a listener on 127.0.0.1, send
// one 64-byte request, read the answer and close, over and over; the
// accept loop starts a goroutine per connection that reads the request
// under a 1 s read deadline, writes it back and closes first. late holds
// each connection's dial-to-answer time.
type churnClient struct {
	opened, answered int64
	err              error
	rtt              []int64
}

func schedConnChurn(r *schedResult) {
	const clients = 64
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptbench-go: conn-churn: %v\n", err)
		os.Exit(1)
	}
	addr := ln.Addr().(*net.TCPAddr)
	var served, started int64
	var handlers sync.WaitGroup
	want := opsWanted()
	quota := (want + clients - 1) / clients
	cs := make([]churnClient, clients)
	var wg sync.WaitGroup
	base := runtime.NumGoroutine()
	r.begin()
	handlers.Add(1)
	go func() {
		defer handlers.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			handlers.Add(1)
			atomic.AddInt64(&started, 1)
			go func(c *net.TCPConn) {
				defer handlers.Done()
				buf := make([]byte, 64)
				c.SetReadDeadline(time.Now().Add(time.Second))
				if _, err := io.ReadFull(c, buf); err == nil {
					if _, err := c.Write(buf); err == nil {
						atomic.AddInt64(&served, 1)
					}
				}
				c.Close()
			}(c)
		}
	}()
	wg.Add(clients)
	for i := range cs {
		go func(p *churnClient) {
			defer wg.Done()
			req, rep := bytes.Repeat([]byte{'q'}, 64), make([]byte, 64)
			for {
				t := time.Now()
				if quota > 0 && p.opened >= quota || quota == 0 && !t.Before(r.end) {
					break
				}
				binary.LittleEndian.PutUint64(req, uint64(p.opened))
				p.opened++
				c, err := net.DialTCP("tcp", nil, addr)
				if err == nil {
					c.SetDeadline(t.Add(time.Second))
					_, err = c.Write(req)
					if err == nil {
						_, err = io.ReadFull(c, rep)
					}
					c.Close()
				}
				if err == nil && !bytes.Equal(req, rep) {
					err = errors.New("an answer that is not its request")
				}
				if err != nil {
					p.err = err
					break
				}
				p.answered++
				p.rtt = append(p.rtt, int64(time.Since(t)))
			}
		}(&cs[i])
	}
	wg.Wait()
	ln.Close()
	handlers.Wait()
	r.finish()
	r.gsStarted = 1 + clients + started
	r.countFinished(base)
	for i := range cs {
		r.waits += cs[i].opened
		r.wakes += cs[i].answered
		r.late = append(r.late, cs[i].rtt...)
		if err == nil {
			err = cs[i].err
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptbench-go: conn-churn: a connection failed: %v\n", err)
	}
	if served != r.wakes {
		r.wakes = served
	}
	r.ops = r.wakes
}

func runSched() {
	var r schedResult
	switch *workload {
	case "spawn":
		schedSpawn(&r)
	case "pingpong":
		schedPingpong(&r)
	case "chan-timeout":
		schedChanTimeout(&r)
	case "sleep":
		want := opsWanted()
		runSleepers(&r, 1000, 50*time.Microsecond, (want+999)/1000)
	case "sleep-1":
		// timed, as ours: ptbench runs latency workloads for their time
		runSleepers(&r, 1, 50*time.Microsecond, 0)
	case "busy-lateness":
		schedBusyLateness(&r)
	case "memory-g":
		schedMemoryG(&r)
	case "spawn-burst":
		schedSpawnBurst(&r)
	case "rpc-sched":
		schedRPC(&r)
	case "conn-churn":
		schedConnChurn(&r)
	}
	sort.Slice(r.late, func(i, j int) bool { return r.late[i] < r.late[j] })
	extra := fmt.Sprintf(",\"gs_started\":%d,\"gs_finished\":%d,\"waits\":%d,\"wakes\":%d,"+
		"\"early_wakes\":%d,\"cpu_sys_s\":%.4f", r.gsStarted, r.gsFinished, r.waits, r.wakes,
		r.early, r.sys)
	emit(r.ops, r.elapsed, r.cpu, r.late, r.bytes, r.createNs, r.releaseNs, 0, 0, extra)
}
