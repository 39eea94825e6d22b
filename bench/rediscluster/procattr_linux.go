package main

import "syscall"

// procAttr puts each redis-server in a process group of its own, so that a
// Ctrl-C at the terminal reaches only the benchmark, which stops the
// servers in order; and has the kernel kill it should the benchmark die
// without stopping it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
