--
-- PostgreSQL database dump
--
SET statement_timeout = 0;
SET client_encoding = 'UTF8';
SELECT pg_catalog.set_config('search_path', '', false);
CREATE TYPE public.mpaa_rating AS ENUM ('G', 'PG', 'PG-13', 'R', 'NC-17');
CREATE FUNCTION public.last_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.last_update = CURRENT_TIMESTAMP;
    RETURN NEW;
END $$;
CREATE SEQUENCE public.actor_actor_id_seq START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1;
CREATE TABLE public.actor (
    actor_id integer DEFAULT nextval('public.actor_actor_id_seq'::regclass) NOT NULL,
    first_name text,
    last_update timestamp with time zone DEFAULT now() NOT NULL
);
CREATE TABLE public.film (
    film_id integer NOT NULL,
    title text NOT NULL,
    rating public.mpaa_rating DEFAULT 'G'::public.mpaa_rating,
    special_features text[],
    rental_rate numeric(4,2) DEFAULT 4.99 NOT NULL,
    CONSTRAINT film_rate_check CHECK ((rental_rate >= 0))
);
CREATE TABLE public.film_actor (
    actor_id integer NOT NULL,
    film_id integer NOT NULL
);
COPY public.actor (actor_id, first_name, last_update) FROM stdin;
1	PENELOPE	2022-02-15 09:34:33+00
2	NICK\tTAB	2022-02-15 09:34:33+00
3	\N	2022-02-15 09:34:33+00
\.
COPY public.film (film_id, title, rating, special_features, rental_rate) FROM stdin;
1	ACADEMY DINOSAUR	PG	{"Deleted Scenes","Behind the Scenes"}	0.99
2	ACE; GOLDFINGER	G	{Trailers}	4.99
\.
COPY public.film_actor (actor_id, film_id) FROM stdin;
1	1
2	1
2	2
\.
ALTER TABLE ONLY public.actor
    ADD CONSTRAINT actor_pkey PRIMARY KEY (actor_id);
ALTER TABLE ONLY public.film
    ADD CONSTRAINT film_pkey PRIMARY KEY (film_id);
ALTER TABLE ONLY public.film_actor
    ADD CONSTRAINT film_actor_pkey PRIMARY KEY (actor_id, film_id);
CREATE INDEX idx_title ON public.film USING btree (title);
ALTER TABLE ONLY public.film_actor
    ADD CONSTRAINT film_actor_actor_id_fkey FOREIGN KEY (actor_id) REFERENCES public.actor(actor_id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE ONLY public.film_actor
    ADD CONSTRAINT film_actor_film_id_fkey FOREIGN KEY (film_id) REFERENCES public.film(film_id) ON UPDATE CASCADE ON DELETE RESTRICT;
