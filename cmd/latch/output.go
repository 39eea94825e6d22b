package main

// outputFormats are the values of -o (--output) of the read commands.
var outputFormats = []string{"json", "table"}
