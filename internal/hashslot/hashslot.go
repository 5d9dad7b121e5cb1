// Package hashslot computes Redis Cluster hash slots, for the keys and
// channels the lab places on chosen masters.
package hashslot

import (
	"strconv"
	"strings"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Of is the hash slot of key: CRC16 (XMODEM) of its hash tag, the part
// between the first { and the next }, if not empty, or of the whole key,
// modulo 16384.
func Of(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// TagIn returns a hash tag, "{prefix:N}", whose slot is in [lo, hi]: a
// name that lands on the master serving those slots. ok is false when
// the range is empty or out of bounds.
func TagIn(prefix string, lo, hi int) (tag string, ok bool) {
	if lo < 0 || hi >= Slots || lo > hi {
		return "", false
	}
	for n := 0; ; n++ { // every slot has a tag within a few hundred thousand tries
		tag = "{" + prefix + ":" + strconv.Itoa(n) + "}"
		if s := Of(tag); lo <= s && s <= hi {
			return tag, true
		}
	}
}
