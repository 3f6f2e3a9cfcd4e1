package main

// timerslack.c raises the timer slack of tooljail's threads before the Go
// runtime starts; importing "C" makes cgo build it into the binary.

import "C"
