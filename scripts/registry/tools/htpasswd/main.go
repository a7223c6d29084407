// Command htpasswd prints one htpasswd line, "USER:BCRYPT-HASH", for the
// user named by -user and the password read from standard input (so that
// it never appears on a command line), as the registry's htpasswd
// authentication reads them (bcrypt only).
//
//	printf %s "$password" | htpasswd -user podlife >htpasswd
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	user := flag.String("user", "", "user name (no colon)")
	flag.Parse()
	if *user == "" || strings.ContainsAny(*user, ":\n") {
		log.Fatal("htpasswd: -user is required and may not contain ':' or a newline")
	}
	pw, err := io.ReadAll(os.Stdin)
	if err != nil {
		log.Fatalf("htpasswd: reading the password: %v", err)
	}
	pw = bytes.TrimRight(pw, "\r\n")
	if len(pw) == 0 {
		log.Fatal("htpasswd: empty password on standard input")
	}
	hash, err := bcrypt.GenerateFromPassword(pw, bcrypt.DefaultCost)
	if err != nil {
		log.Fatalf("htpasswd: %v", err)
	}
	fmt.Printf("%s:%s\n", *user, hash)
}
