package wake

// idBytes is the size of a fair waiter's id's random part: 128 bits, as a
// lock holder's secret, which package dlm draws it as.
const idBytes = 16

// IDLen is the length of a fair waiter's id: idBytes in unpadded base64,
// longer than any release, by which a wake message tells the two apart.
// Package dlm's TestFairIDIsWakeID checks that its ids have this length.
const IDLen = (idBytes*8 + 5) / 6
