# pipeguard-webhook and the pipeguard CLI in one image: static binaries on a
# distroless, non-root base. The agent has its own Windows image
# (Dockerfile.agent.windows).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/pipeguard-webhook ./cmd/pipeguard

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/pipeguard-webhook /out/pipeguard /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pipeguard-webhook"]
