package podworker

import "flag"

var updateTranscripts = flag.Bool("update", false, "rewrite testdata/machine transcripts with the current output")
