# bestofn: the bot, git and bubblewrap (attempts run under bubblewrap with overlayfs forks).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/bot ./cmd/bot

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap ca-certificates python3 python3-pip python3-venv \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bot /usr/local/bin/bot
ENV PORT=8080 DATA_DIR=/data
EXPOSE 8080
# Root inside the VM: overlayfs mounts for forks need it; every attempt runs in its own bubblewrap namespaces.
ENTRYPOINT ["/usr/local/bin/bot"]
CMD ["serve"]
