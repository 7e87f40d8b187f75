package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"+OK\r\n", "OK"},
		{"+\r\n", ""},
		{"-ERR boom\r\n", Error("ERR boom")},
		{"-NOSCRIPT No matching script. Please use EVAL.\r\n", Error("NOSCRIPT No matching script. Please use EVAL.")},
		{":0\r\n", int64(0)},
		{":-5\r\n", int64(-5)},
		{":9223372036854775807\r\n", int64(9223372036854775807)},
		{":-9223372036854775808\r\n", int64(-9223372036854775808)},
		{"$5\r\nhello\r\n", "hello"},
		{"$0\r\n\r\n", ""},
		{"$7\r\na\r\n\x00b\xff\n\r\n", "a\r\n\x00b\xff\n"},
		{"$-1\r\n", nil},
		{"*-1\r\n", nil},
		{"*0\r\n", []any{}},
		{"*3\r\n:1\r\n$3\r\ntwo\r\n$-1\r\n", []any{int64(1), "two", nil}},
		{"*2\r\n*1\r\n*0\r\n-ERR inner\r\n", []any{[]any{[]any{}}, Error("ERR inner")}},
	} {
		got, err := readReply(bufio.NewReader(strings.NewReader(tc.in)))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("readReply(%q) = %#v, %v; want %#v, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestReadReplyBroken(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", io.EOF},
		{"+OK", io.ErrUnexpectedEOF},
		{"+OK\n", errProtocol},
		{"\r\n", errProtocol},
		{"?what\r\n", errProtocol},
		{":12a\r\n", errProtocol},
		{":99999999999999999999\r\n", errProtocol},
		{"$-2\r\n", errProtocol},
		{"$x\r\n", errProtocol},
		{"$5\r\nab", io.ErrUnexpectedEOF},
		{"$3\r\nabcde", errProtocol},
		{"$999999999999\r\n", errProtocol},
		{"*-2\r\n", errProtocol},
		{"*2\r\n:1\r\n", io.EOF},
		{"*1\r\n?\r\n", errProtocol},
	} {
		got, err := readReply(bufio.NewReader(strings.NewReader(tc.in)))
		if !errors.Is(err, tc.want) {
			t.Errorf("readReply(%q) = %#v, %v; want error %v", tc.in, got, err, tc.want)
		}
	}
}

func TestWriteCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "*1\r\n$4\r\nPING\r\n"},
		{[]string{"SET", "k", ""}, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{[]string{"GET", "a\r\nb\x00"}, "*2\r\n$3\r\nGET\r\n$5\r\na\r\nb\x00\r\n"},
	} {
		var buf bytes.Buffer
		if err := writeCommand(bufio.NewWriter(&buf), tc.args); err != nil || buf.String() != tc.want {
			t.Errorf("writeCommand(%q) wrote %q, %v; want %q, nil", tc.args, buf.String(), err, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	const text = "WRONGTYPE Operation against a key holding the wrong kind of value"
	if got := Error(text).Error(); got != text {
		t.Errorf("Error(%q).Error() = %q; want the reply text unchanged", text, got)
	}
}
