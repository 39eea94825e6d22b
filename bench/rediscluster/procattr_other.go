//go:build !linux

package main

import "syscall"

// procAttr leaves the redis-server processes as they are: a Ctrl-C at the
// terminal may reach them before the benchmark stops them.
func procAttr() *syscall.SysProcAttr { return nil }
