package stack

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// FaultKeyEnv is the variable that hands every instance the stack's fault
// key (the app's -fault-key): an instance arms the faults a request asks
// for (work=, fault=, pause=) only when the request carries the key
// (contract.HeaderFaultKey). The stack's own runs carry it (the races it
// serves); a request from anywhere else cannot arm a fault. It goes in
// the environment, not on the command line, where ps shows it to anyone.
const FaultKeyEnv = "LOCKLADDER_FAULT_KEY"

// newFaultKey is a fresh secret of 128 bits.
func newFaultKey() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("stack: fault key: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// FaultKey is the secret the stack handed its instances (FaultKeyEnv):
// a request that carries it may arm faults on them. The stack's race
// runner sends it; nothing else should.
func (s *Stack) FaultKey() string { return s.faultKey }

// Config is the configuration the stack runs, its defaults applied and
// its free ports chosen.
func (s *Stack) Config() Config { return s.cfg }
