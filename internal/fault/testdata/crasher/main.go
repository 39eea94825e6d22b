// Command crasher hits a crash point a number of times, printing "hit i"
// before the i-th, then "survived": fault's tests run it built with and
// without the tag faults.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/latch-run/latch/internal/fault"
)

func main() {
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	for i := 1; i <= n; i++ {
		fmt.Printf("hit %d\n", i)
		fault.Point(os.Args[1])
	}
	fmt.Println("survived")
}
