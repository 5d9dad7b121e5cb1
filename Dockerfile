# Builds cmd/app and cmd/bench; docker-compose.yml runs app1..app3 and the
# bench from this one image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/app ./cmd/app \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/bench ./cmd/bench

# Alpine rather than distroless: its busybox wget is the compose healthcheck.
FROM alpine:3.21
COPY --from=build /out/app /out/bench /
# The bench's reports: a directory the unprivileged user owns, so that a
# volume mounted there (docker-compose.yml's results) is writable by it.
RUN mkdir /results && chown 65534:65534 /results
VOLUME /results
USER 65534:65534
ENV APP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/app"]
