// Fallback Bigtable emulator for .ci/bigtable.sh, used only when the
// preinstalled google-cloud-cli-bigtable-emulator is missing: Debian's
// golang-google-cloud-dev ships bttest (the in-memory server) but not
// upstream's 30-line main, which this is.
package main

import (
	"flag"
	"fmt"
	"log"

	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/grpc"
)

func main() {
	host := flag.String("host", "localhost", "the address to bind to on the local machine")
	port := flag.Int("port", 9000, "the port number to bind to on the local machine")
	flag.Parse()
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(256 * 1024 * 1024),
		grpc.MaxSendMsgSize(256 * 1024 * 1024),
	}
	srv, err := bttest.NewServer(fmt.Sprintf("%s:%d", *host, *port), opts...)
	if err != nil {
		log.Fatalf("failed to start emulator: %v", err)
	}
	fmt.Printf("Cloud Bigtable emulator running on %s\n", srv.Addr)
	select {}
}
