package adapterkit

import (
	"fmt"
	"strings"
)

// slotRange is a range of slots and its master, from CLUSTER SLOTS.
type slotRange struct {
	first, last int64
	addr        string
}

// parseSlots reads the reply to CLUSTER SLOTS, normalized: one row per
// range of slots, its first and last slot and its master's host and port
// first among its servers. A malformed row is an error of client's.
func parseSlots(client string, reply any) ([]slotRange, error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: unexpected reply %v", client, reply)
	}
	slots := make([]slotRange, 0, len(rows))
	for _, row := range rows {
		f, _ := row.([]any)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: unexpected row %v", client, row)
		}
		first, ok1 := f[0].(int64)
		last, ok2 := f[1].(int64)
		m, _ := f[2].([]any)
		if !ok1 || !ok2 || len(m) < 2 {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: unexpected row %v", client, row)
		}
		host, _ := m[0].(string)
		port, _ := m[1].(int64)
		slots = append(slots, slotRange{first, last, fmt.Sprintf("%s:%d", host, port)})
	}
	return slots, nil
}

// KeySlot returns the Redis Cluster hash slot of key (CRC16 of the key, or
// of its hash tag, modulo 16384).
func KeySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
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
	return crc % 16384
}
